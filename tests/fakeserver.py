"""A loopback fake model server speaking enough of the Ollama and OpenAI HTTP APIs for tests.

Embeddings are deterministic feature hashes of words (plus a little character-trigram signal),
so texts that share words are close and retrieval tests mean something. Chat replies are
scripted. Fault switches make the next requests fail, stall, drop or return broken JSON.

    with FakeModelServer() as server:
        server.reply('{"answer": 42}')
        chat = create_chat(LLMConfig(provider="ollama", model="m", url=server.ollama_url))
        assert chat.chat([{"role": "user", "content": "?"}]).text == '{"answer": 42}'
        assert server.requests[0].body["stream"] is False
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakerules import capped, count_tokens, prompt_tokens, refused_format, too_long

Responder = Callable[[dict[str, Any]], str]
ROOMY = 32768  # the window the fake states when no context_length is set

_WORD = re.compile(r"\w+")


def _bucket(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): Python salts str hashes per process and the vectors must be stable.
    value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
    return value % dim, 1.0 if (value >> 40) & 1 else -1.0


def fake_embedding(text: str, dim: int = 64) -> list[float]:
    """Unit-length signed feature hash of lower-cased words (weight 1) and their trigrams (1/4)."""
    vector = [0.0] * dim
    for word in _WORD.findall(text.lower()):
        index, sign = _bucket("w:" + word, dim)
        vector[index] += sign
        padded = f"<{word}>"
        for i in range(len(padded) - 2):
            index, sign = _bucket("t:" + padded[i : i + 3], dim)
            vector[index] += 0.25 * sign
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0:  # empty text: real servers still return a unit vector
        return [1.0] + [0.0] * (dim - 1)
    return [v / norm for v in vector]


def refused_url() -> str:
    """An http://127.0.0.1:PORT address where nothing listens (the port was just freed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@dataclass(frozen=True)
class LoggedRequest:
    """One request as the server saw it; header names are lower-cased."""

    method: str
    path: str
    body: Any  # parsed JSON, or the raw text when it was not JSON, or None
    headers: dict[str, str]


class _ResponderFailed(Exception):
    """The scripted responder raised; the request is answered with HTTP 500 saying why."""


@dataclass(frozen=True)
class _Fault:
    kind: str  # status | drop | malformed
    status: int = 500
    message: str = "internal error"
    retry_after: str | None = None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


class FakeModelServer:
    """Ollama and OpenAI-compatible endpoints on 127.0.0.1, with a request log and faults."""

    def __init__(self, dim: int = 64, models: set[str] | None = None) -> None:
        self.dim = dim
        self.models = models  # None accepts any model name; a set answers 404 for others
        self.delay = 0.0  # seconds every request waits before it is answered
        self.hold_after: int | None = None  # requests past this many wait for release()
        self._released = threading.Event()
        self.api_key: str | None = None  # when set, /v1 requests need "Bearer <key>"
        self.reject_json_schema = False  # answer response_format json_schema with a 400
        # The response formats /v1 accepts, most exact first (memcli.llm.formats.FORMS):
        # "json_object+schema" refuses json_schema with a 500 as llama-cpp-python does,
        # "json_object" refuses a schema in any form, "prompt" any response_format.
        self.structured = "json_schema"
        # The model's window: a longer prompt + max_tokens is refused with llama-cpp-python's
        # 400 (and Ollama cuts it silently, so it only records that it did, in `cut_prompts`).
        # None: no limit is enforced, and a roomy window (ROOMY) is stated.
        self.context_length: int | None = None
        # "refuse": a prompt + max_tokens past the window is refused (OpenAI, vLLM);
        # "shorten": only a prompt past it is, and max_tokens is cut to what the window has
        # left without a word (llama-cpp-python's server).
        self.window_mode = "refuse"
        self.advertise_context = True  # /props (llama.cpp) and /api/show state the window
        self.cut_prompts = 0
        self.responder: Responder | None = None
        self.errors: list[str] = []  # exceptions raised inside handlers, for debugging
        self._replies: deque[str] = deque()
        self._faults: deque[_Fault] = deque()
        self._log: list[LoggedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeModelServer:
        """Bind a free loopback port and serve from a daemon thread."""
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.fake = self
        # A short poll interval: shutdown() waits for the loop to notice, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; stalled handlers are woken up."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT"""
        assert self._httpd is not None, "start the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def ollama_url(self) -> str:
        """Base address for the Ollama API."""
        return self.url

    @property
    def openai_url(self) -> str:
        """Base address for the OpenAI-compatible API (ends in /v1)."""
        return self.url + "/v1"

    # -- scripting ---------------------------------------------------------------------------

    def reply(self, *texts: str) -> None:
        """Queue chat replies; each chat request takes the next one."""
        with self._lock:
            self._replies.extend(texts)

    def fail_next(
        self,
        n: int = 1,
        status: int = 500,
        message: str = "internal error",
        retry_after: float | str | None = None,
    ) -> None:
        """The next n requests get HTTP `status` with `message` in the API's error shape."""
        after = None if retry_after is None else str(retry_after)
        with self._lock:
            self._faults.extend(_Fault("status", status, message, after) for _ in range(n))

    def drop_next(self, n: int = 1) -> None:
        """The next n requests are read, then the connection is closed with no answer."""
        with self._lock:
            self._faults.extend(_Fault("drop") for _ in range(n))

    def malformed_next(self, n: int = 1) -> None:
        """The next n requests get 200 with a body that is not valid JSON."""
        with self._lock:
            self._faults.extend(_Fault("malformed") for _ in range(n))

    def hold(self, after: int) -> None:
        """Answer `after` more requests, then keep every later one waiting until release():
        a client caught mid-work, deterministically, however fast it runs."""
        with self._lock:
            self._released.clear()
            self.hold_after = len(self._log) + after

    def release(self) -> None:
        """Answer the held requests and stop holding."""
        self.hold_after = None
        self._released.set()

    def held(self) -> bool:
        """Whether a request is waiting at the hold now."""
        with self._lock:
            return self.hold_after is not None and len(self._log) > self.hold_after

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request so far, oldest first."""
        with self._lock:
            return list(self._log)

    def requests_to(self, path: str) -> list[LoggedRequest]:
        """The requests whose path is `path`."""
        return [r for r in self.requests if r.path == path]

    # -- used by the handler -----------------------------------------------------------------

    def _record(self, request: LoggedRequest) -> _Fault | None:
        with self._lock:
            self._log.append(request)
            # Faults hit the requests that run a model, not a client's questions about
            # the server (/props, /v1/models, /api/show).
            runs = _runs_model(request.path)
            return self._faults.popleft() if self._faults and runs else None

    def _wait_at_hold(self) -> bool:
        """Wait while this request is past the hold; True when the server is stopping."""
        with self._lock:
            number = len(self._log)
        while self.hold_after is not None and number > self.hold_after:
            if self._released.wait(0.05) or self._stopping.is_set():
                break
        return self._stopping.is_set()

    def _chat_text(self, body: dict[str, Any]) -> str:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        if self.responder is None:
            return "{}"
        try:
            return self.responder(body)
        except Exception as exc:  # a broken script: say so in the reply, not as a dropped line
            self.errors.append(traceback.format_exc())
            raise _ResponderFailed(f"the test's responder failed: {exc!r}") from exc

    def _unknown_model(self, body: Any) -> str | None:
        model = body.get("model") if isinstance(body, dict) else None
        return None if self.models is None or model in self.models else str(model)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out on purpose leave broken pipes behind; keep them quiet.
        self.fake.errors.append(traceback.format_exc())


def _error_body(path: str, status: int, message: str, code: str = "error") -> dict[str, Any]:
    if path.startswith("/v1/"):
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "code": code}}
    return {"error": message}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # HTTP/1.0: one request per connection, so a dropped connection never poisons a pool.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log replaces stderr chatter

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _read_body(self) -> Any:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        body = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        fault = fake._record(LoggedRequest(method, path, body, headers))
        if fake._wait_at_hold():
            return
        if fake.delay and fake._stopping.wait(fake.delay):
            return
        if fault is not None:
            self._fault(path, fault)
            return
        refusal = self._refusal(fake, path, body, headers)
        if refusal is not None:
            self._send(*refusal)
            return
        route = _ROUTES.get((method, path))
        if route is None:
            self._send(404, _error_body(path, 404, f"no route for {method} {path}"))
            return
        try:
            route(self, fake, body if isinstance(body, dict) else {})
        except _ResponderFailed as exc:
            self._send(500, _error_body(path, 500, str(exc)))

    def _fault(self, path: str, fault: _Fault) -> None:
        if fault.kind == "drop":
            self.close_connection = True
        elif fault.kind == "malformed":
            self._send(200, b'{"model": "fake", "embeddings": [[0.1, 0.2,')
        else:
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            self._send(fault.status, _error_body(path, fault.status, fault.message), extra)

    def _refusal(
        self, fake: FakeModelServer, path: str, body: Any, headers: dict[str, str]
    ) -> tuple[int, dict[str, Any]] | None:
        """Authentication, model and json_schema checks, in the order real servers make them."""
        if fake.api_key and path.startswith("/v1/"):
            given = headers.get("authorization", "").removeprefix("Bearer ")
            if given != fake.api_key:
                # Echoes the wrong key in full, as a careless server might, so tests can
                # check that memcli keeps it out of its own messages.
                text = f"Incorrect API key provided: {given or '(none)'}"
                return 401, _error_body(path, 401, text, "invalid_api_key")
        if _runs_model(path) and (missing := fake._unknown_model(body)) is not None:
            if path.startswith("/v1/"):
                text = f"The model `{missing}` does not exist or you do not have access to it."
                return 404, _error_body(path, 404, text, "model_not_found")
            return 404, _error_body(path, 404, f'model "{missing}" not found, try pulling it first')
        response_format = body.get("response_format") if isinstance(body, dict) else None
        if fake.reject_json_schema and (response_format or {}).get("type") == "json_schema":
            text = "response_format.type must be 'json_object' or 'text'"
            return 400, _error_body(path, 400, text)
        refused = refused_format(fake.structured, response_format)
        if refused is not None:
            return refused[0], _error_body(path, refused[0], refused[1])
        if path == "/v1/chat/completions" and fake.context_length is not None:
            return too_long(fake.context_length, body, fake.window_mode == "shorten")
        return None

    # -- routes ------------------------------------------------------------------------------

    def ollama_embed(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        texts = _texts(body)
        vectors = [fake_embedding(t, fake.dim) for t in texts]
        tokens = sum(count_tokens(t) for t in texts)
        self._send(
            200, {"model": body.get("model"), "embeddings": vectors, "prompt_eval_count": tokens}
        )

    def ollama_chat(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        options = body.get("options") or {}
        window = options.get("num_ctx") or fake.context_length
        if window and prompt_tokens(body) > window:
            with fake._lock:
                fake.cut_prompts += 1
        text, cut = capped(fake._chat_text(body), options.get("num_predict"))
        head = {"model": body.get("model"), "created_at": _now()}
        final = {
            **head,
            "message": {"role": "assistant", "content": text},
            "done": True,
            "done_reason": "length" if cut else "stop",
            "prompt_eval_count": prompt_tokens(body),
            "eval_count": count_tokens(text),
        }
        if body.get("stream") is False:
            self._send(200, final)
            return
        # Ollama streams unless told not to: NDJSON, the text first, then the closing record.
        first = {**head, "message": {"role": "assistant", "content": text}, "done": False}
        final["message"] = {"role": "assistant", "content": ""}
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.end_headers()
        self.wfile.write(f"{json.dumps(first)}\n{json.dumps(final)}\n".encode())

    def ollama_tags(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        names = sorted(fake.models) if fake.models is not None else ["fake-model:latest"]
        info = {"modified_at": _now(), "size": 0, "digest": "0" * 64}
        self._send(200, {"models": [{"name": n, "model": n, **info} for n in names]})

    def ollama_version(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        self._send(200, {"version": "0.6.3"})

    def openai_embeddings(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        texts = _texts(body)
        data = [{"index": i, "embedding": fake_embedding(t, fake.dim)} for i, t in enumerate(texts)]
        tokens = sum(count_tokens(t) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        # Reversed on purpose: the API promises indices, not order, so clients must sort.
        self._send(200, {"object": "list", "data": data[::-1], "usage": usage})

    def openai_chat(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        limit = body.get("max_tokens")
        if fake.window_mode == "shorten" and fake.context_length and isinstance(limit, int):
            limit = min(limit, fake.context_length - prompt_tokens(body))
        text, cut = capped(fake._chat_text(body), limit)
        message = {"role": "assistant", "content": text}
        choice = {"index": 0, "message": message, "finish_reason": "length" if cut else "stop"}
        prompt, completion = prompt_tokens(body), count_tokens(text)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
        self._send(200, {"object": "chat.completion", "choices": [choice], "usage": usage})

    def llamacpp_props(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        if not fake.advertise_context:
            self._send(404, {"detail": "Not Found"})
            return
        settings = {"n_ctx": fake.context_length or ROOMY, "temperature": 0.8}
        self._send(200, {"default_generation_settings": settings, "total_slots": 1})

    def ollama_show(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        name = str(body.get("model") or body.get("name") or "")
        if fake.models is not None and name not in fake.models:
            self._send(404, {"error": f"model '{name}' not found"})
            return
        stated = fake.context_length or ROOMY
        parameters = f"num_ctx {stated}\ntemperature 0.7" if fake.advertise_context else ""
        info = {"general.architecture": "llama", "llama.context_length": 131072}
        details = {"format": "gguf", "family": "llama", "parameter_size": "135M"}
        shown = {"parameters": parameters, "model_info": info, "details": details}
        self._send(200, {**shown, "modified_at": _now(), "license": "", "template": ""})

    def openai_models(self, fake: FakeModelServer, body: dict[str, Any]) -> None:
        names = sorted(fake.models) if fake.models is not None else ["fake-model"]
        self._send(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]})


def _texts(body: dict[str, Any]) -> list[str]:
    texts = body.get("input", "")
    return [texts] if isinstance(texts, str) else [str(t) for t in texts]


def _runs_model(path: str) -> bool:
    # The endpoints that run a model, and so check its name.
    return path in ("/api/embed", "/api/chat", "/v1/embeddings", "/v1/chat/completions")


_ROUTES: dict[tuple[str, str], Callable[[_Handler, FakeModelServer, dict[str, Any]], None]] = {
    ("POST", "/api/embed"): _Handler.ollama_embed,
    ("POST", "/api/chat"): _Handler.ollama_chat,
    ("GET", "/api/tags"): _Handler.ollama_tags,
    ("GET", "/api/version"): _Handler.ollama_version,
    ("POST", "/v1/embeddings"): _Handler.openai_embeddings,
    ("POST", "/v1/chat/completions"): _Handler.openai_chat,
    ("GET", "/v1/models"): _Handler.openai_models,
    ("GET", "/props"): _Handler.llamacpp_props,
    ("POST", "/api/show"): _Handler.ollama_show,
}
