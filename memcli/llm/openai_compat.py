"""Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, LM Studio...) over plain httpx."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from memcli.config import EmbeddingConfig, LLMConfig
from memcli.llm import BaseChat, ChatReply
from memcli.llm.embedder import RemoteEmbedder
from memcli.llm.formats import (
    CONSTRAINED,
    FORMS,
    FormatChoice,
    rejects_format,
    schema_name,
    with_guide,
)
from memcli.llm.retry import (
    Backoff,
    BadReply,
    BadStatus,
    Endpoint,
    Retries,
    checked_vectors,
    parse_retry_after,
    timeouts,
)
from memcli.llm.window import refused_as_too_long
from memcli.text import hide_secret

T = TypeVar("T")

DEFAULT_URL = "https://api.openai.com/v1"
NAME = "the OpenAI-compatible server"


class _Refused(Exception):
    """An answer the chat loop handles itself: the format refused, or the prompt too long."""

    def __init__(self, kind: str, message: str, body: Any) -> None:
        super().__init__(message)
        self.kind = kind  # "format" | "too_long"
        self.message = message
        self.body = body


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _server_message(response: httpx.Response) -> str:
    """The error text a server put in its body: OpenAI's error.message, or what there is."""
    body = _body(response)
    if body is None:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error:
            return str(error)[:300]
    return json.dumps(body)[:300]


class _Connection:
    """One httpx client plus the retry loop and error translation both endpoints share."""

    def __init__(self, cfg: EmbeddingConfig | LLMConfig, backoff: Backoff | None) -> None:
        url = cfg.url or DEFAULT_URL
        key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
        # The key lives only in the client's headers: never on this object, never in a message.
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.http = httpx.Client(base_url=url, timeout=timeouts(cfg.timeout), headers=headers)
        state = "set" if key else "not set"
        endpoint = Endpoint(
            name=NAME,
            url=url,
            timeout=cfg.timeout,
            unreachable_fix="check llm.url / embedding.url and that the server is running",
            auth_fix="set the API key in the environment variable named by api_key_env "
            f"(currently {cfg.api_key_env}, which is {state})",
            not_found_fix=f"check that the server serves a model named {cfg.model!r} "
            "and that the URL ends in /v1",
        )
        self.retries = Retries(endpoint, cfg.max_retries, backoff or Backoff())

    def _scrub(self, text: str) -> str:
        # Some servers echo the key they were sent in their error text.
        key = self.http.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return hide_secret(text, key)

    def post(
        self,
        path: str,
        payload: dict[str, Any],
        parse: Callable[[dict[str, Any]], T],
        *,
        chat: bool = False,
        schema_sent: bool = False,
    ) -> T:
        """POST JSON, check the answer and turn its body into a result with `parse`.

        For a `chat` request, a prompt refused as too long and a refused response format
        (when `schema_sent`) raise `_Refused` at once, for the chat loop to handle."""

        def attempt() -> T:
            response = self.http.post(path, json=payload)
            if response.status_code >= 400:
                message = self._scrub(_server_message(response))
                status = response.status_code
                if chat and refused_as_too_long(status, message):
                    raise _Refused("too_long", message, _body(response))
                if schema_sent and rejects_format(status, message):
                    raise _Refused("format", message, None)
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                raise BadStatus(status, message, retry_after)
            try:
                body = response.json()
            except ValueError:
                raise BadReply(BadReply.NOT_JSON) from None
            try:
                return parse(body)
            except (KeyError, IndexError, TypeError, AttributeError, ValueError):
                raise BadReply(BadReply.WRONG_SHAPE) from None

        return self.retries.run(attempt)

    def get_json(self, url: str) -> Any:
        """A GET that asks the server about itself: the JSON body, or None when it answers
        with an error or something else than JSON. A server that cannot be reached is
        ProviderUnreachable at once, as a chat request would find it (no second wait)."""

        def attempt() -> Any:
            response = self.http.get(url)
            if response.status_code != 200:
                return None
            try:
                return response.json()
            except ValueError:
                return None

        return self.retries.run(attempt)

    def embed(self, model: str, batch: list[str]) -> list[list[float]]:
        """One POST /embeddings: the vectors of a batch of texts."""

        def parse(body: dict[str, Any]) -> list[list[float]]:
            # The API promises an index per item, not an order.
            items = sorted(body["data"], key=lambda item: item["index"])
            return checked_vectors([item["embedding"] for item in items], len(batch))

        return self.post("/embeddings", {"model": model, "input": batch}, parse)


def _parse_completion(body: dict[str, Any]) -> ChatReply:
    usage = body.get("usage") or {}
    choice = body["choices"][0]
    return ChatReply(
        text=choice["message"].get("content") or "",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        truncated=choice.get("finish_reason") == "length",
    )


def _response_format(form: str, schema: dict[str, Any]) -> dict[str, Any] | None:
    if form == "json_schema":
        native = {"name": schema_name(schema), "schema": schema, "strict": False}
        return {"type": "json_schema", "json_schema": native}
    if form == "json_object+schema":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_object"} if form == "json_object" else None


def _advertised_context(props: Any, models: Any, model: str) -> int | None:
    """The context size a server states: llama.cpp's /props, else its entry in /models
    (vLLM's max_model_len, LM Studio's loaded_context_length, context_length)."""
    if isinstance(props, dict):
        settings = props.get("default_generation_settings")
        for found in (settings if isinstance(settings, dict) else {}, props):
            if isinstance(found.get("n_ctx"), int) and found["n_ctx"] > 0:
                return int(found["n_ctx"])
    entries = models.get("data") if isinstance(models, dict) else None
    if not isinstance(entries, list):
        return None
    mine = [e for e in entries if isinstance(e, dict) and e.get("id") == model]
    for entry in mine or (entries if len(entries) == 1 else []):
        for key in ("max_model_len", "loaded_context_length", "context_length"):
            if isinstance(entry.get(key), int) and entry[key] > 0:
                return int(entry[key])
    return None


class OpenAIChat(BaseChat):
    """Chat through POST /chat/completions; a schema goes in `response_format`, in the
    first form the server accepts (memcli.llm.formats)."""

    provider = "openai"

    def __init__(self, cfg: LLMConfig, *, backoff: Backoff | None = None) -> None:
        super().__init__(cfg)
        self._conn = _Connection(cfg, backoff)
        self.url = cfg.url or DEFAULT_URL
        self.formats = FormatChoice()

    def listed_models(self) -> list[str] | None:
        """The model ids GET /models lists, or None when the server does not answer it."""
        body = self._conn.get_json("/models")
        entries = body.get("data") if isinstance(body, dict) else None
        if not isinstance(entries, list):
            return None
        return [str(e.get("id")) for e in entries if isinstance(e, dict)]

    def server_context(self) -> int | None:
        """The context size the server states, if it states one."""
        root = self.url.rstrip("/").removesuffix("/v1")
        props = self._conn.get_json(root + "/props")
        models = self._conn.get_json("/models") if props is None else None
        return _advertised_context(props, models, self.model)

    def _payload(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> Any:
        form = self.formats.current if schema is not None else None
        sent = messages
        if schema is not None and form not in CONSTRAINED:
            sent = with_guide(messages, schema)
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": sent,
            "temperature": self.temperature,
            "max_tokens": self.window().reply,
        }
        response_format = _response_format(form, schema) if form and schema else None
        if response_format is not None:
            payload["response_format"] = response_format
        return form, sent, payload

    def _send(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> ChatReply:
        """One request in the current form; `_Refused` when it must be sent differently."""
        form, sent, payload = self._payload(messages, schema)
        self.check_fits(sent)
        reply = self._conn.post(
            "/chat/completions", payload, _parse_completion, chat=True, schema_sent=form is not None
        )
        window = self.window()
        window.learn(sent, reply.prompt_tokens)
        if reply.truncated and 0 < reply.completion_tokens < window.reply:
            # The window, not max_tokens, ended the reply: llama-cpp-python shortens
            # max_tokens to what its window has left without saying so. Now we know it.
            window.shrink(reply.prompt_tokens + reply.completion_tokens)
        return reply

    def chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        """The model's reply to `messages`, constrained to `schema` when one is given.

        PromptTooLong when the prompt leaves the reply no room in the model's window."""
        with self._slots:
            for _ in range(len(FORMS) + 1):
                form = self.formats.current
                try:
                    return self._send(messages, schema)
                except _Refused as refused:
                    if refused.kind == "format" and self.formats.refused(form):
                        continue
                    if refused.kind == "too_long" and self.learn_refusal(
                        refused.message, refused.body, messages
                    ):
                        continue
                    raise self.too_long(refused.message) from None
            raise self.too_long("the server kept refusing the prompt")


def create_embedder(cfg: EmbeddingConfig, *, backoff: Backoff | None = None) -> RemoteEmbedder:
    """The registry's entry point for OpenAI-compatible embeddings."""
    return RemoteEmbedder("openai", cfg, _Connection(cfg, backoff).embed)


def create_chat(cfg: LLMConfig, *, backoff: Backoff | None = None) -> OpenAIChat:
    """The registry's entry point for OpenAI-compatible chat."""
    return OpenAIChat(cfg, backoff=backoff)
