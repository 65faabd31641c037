"""Ollama through its official client: embeddings from /api/embed, chat from /api/chat."""

from __future__ import annotations

import json
from typing import Any

import httpx
import ollama
import pydantic

from memcli.config import EmbeddingConfig, LLMConfig
from memcli.llm import BaseChat, ChatReply, retry
from memcli.llm.embedder import RemoteEmbedder
from memcli.llm.formats import FormatChoice, rejects_format, with_guide
from memcli.llm.retry import Backoff, BadReply, BadStatus, Endpoint, Retries, checked_vectors

DEFAULT_URL = "http://127.0.0.1:11434"


def _endpoint(url: str, model: str, timeout: float) -> Endpoint:
    return Endpoint(
        name="Ollama",
        url=url,
        timeout=timeout,
        unreachable_fix="start it with `ollama serve`, or set llm.url / embedding.url",
        auth_fix="this Ollama wants an API key; the ollama client sends the one in OLLAMA_API_KEY",
        not_found_fix=f"`ollama pull {model}`, or pick an installed model from `ollama list`",
    )


class _FormatRefused(Exception):
    """The server refused a JSON schema as `format` (Ollama before 0.5 takes only "json")."""


class _Connection:
    """An ollama.Client plus the retry loop and error translation its calls share."""

    def __init__(self, cfg: EmbeddingConfig | LLMConfig, backoff: Backoff | None) -> None:
        address = cfg.url or DEFAULT_URL
        self.client = ollama.Client(host=address, timeout=retry.timeouts(cfg.timeout))
        endpoint = _endpoint(address, cfg.model, cfg.timeout)
        self.retries = Retries(endpoint, cfg.max_retries, backoff or Backoff())

    def call(self, request: Any) -> Any:
        """Run `request()` against the server with retries and memcli errors."""

        def attempt() -> Any:
            try:
                return request()
            except ollama.ResponseError as exc:
                raise BadStatus(exc.status_code, str(exc.error)) from None
            except json.JSONDecodeError:
                raise BadReply(BadReply.NOT_JSON) from None
            except (pydantic.ValidationError, TypeError):
                # The client builds its response model from the body; a body of the wrong
                # shape fails there.
                raise BadReply(BadReply.WRONG_SHAPE) from None

        return self.retries.run(attempt)

    def embed(self, model: str, batch: list[str]) -> list[Any]:
        """One /api/embed request: the vectors of a batch of texts."""

        def request() -> list[Any]:
            vectors = list(self.client.embed(model=model, input=batch).embeddings)
            return checked_vectors(vectors, len(batch))

        return self.call(request)


def _num_ctx(parameters: str) -> int | None:
    """num_ctx from the `parameters` text /api/show returns ("num_ctx 4096" lines)."""
    for line in (parameters or "").splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    return None


class OllamaChat(BaseChat):
    """Chat through /api/chat; a schema is passed natively as `format` (servers before 0.5
    take only "json": then the schema goes in a system message)."""

    provider = "ollama"
    # Ollama runs a model with a window of its own choosing and cuts longer prompts without
    # a word; memcli assumes the smallest default it has used unless told (or the model's
    # Modelfile sets num_ctx), and sends llm.context_length as num_ctx when it is set.
    default_context = 2048

    def __init__(self, cfg: LLMConfig, *, backoff: Backoff | None = None) -> None:
        super().__init__(cfg)
        self._conn = _Connection(cfg, backoff)
        self.url = cfg.url or DEFAULT_URL
        self.formats = FormatChoice(("json_schema", "prompt"))

    def listed_models(self) -> list[str] | None:
        """The names /api/tags lists, or None when the server does not answer."""
        try:
            listed = self._conn.client.list()
        except (ollama.ResponseError, httpx.HTTPError, ConnectionError, pydantic.ValidationError):
            return None
        return [str(m.model) for m in listed.models]

    def server_context(self) -> int | None:
        """num_ctx when the model's Modelfile sets it (/api/show)."""
        try:
            shown = self._conn.client.show(self.model)
        except (ollama.ResponseError, httpx.HTTPError, ConnectionError, pydantic.ValidationError):
            return None
        return _num_ctx(shown.parameters or "")

    def _options(self) -> dict[str, Any]:
        window = self.window()
        options: dict[str, Any] = {"temperature": self.temperature, "num_predict": window.reply}
        if window.source == "config":
            options["num_ctx"] = window.context
        return options

    def _send(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> ChatReply:
        form = self.formats.current if schema is not None else None
        sent = with_guide(messages, schema) if schema is not None and form == "prompt" else messages
        # Validated here, outside the retry loop, so a malformed message is a plain bug
        # rather than something mistaken for a bad server reply.
        prepared = [ollama.Message.model_validate(m) for m in sent]
        self.check_fits(sent)
        fmt: Any = schema if form == "json_schema" else ("json" if form else None)

        def request() -> ChatReply:
            try:
                response = self._conn.client.chat(
                    model=self.model, messages=prepared, format=fmt,
                    options=self._options(), stream=False,
                )  # fmt: skip
            except ollama.ResponseError as exc:
                if form == "json_schema" and rejects_format(exc.status_code, str(exc.error)):
                    raise _FormatRefused from None
                raise
            return ChatReply(
                text=response.message.content or "",
                prompt_tokens=response.prompt_eval_count or 0,
                completion_tokens=response.eval_count or 0,
                truncated=response.done_reason == "length",
            )

        reply = self._conn.call(request)
        self.window().learn(sent, reply.prompt_tokens)
        return reply

    def chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        """The model's reply to `messages`, constrained to `schema` when one is given.

        PromptTooLong when the prompt leaves the reply no room in the model's window."""
        with self._slots:
            try:
                return self._send(messages, schema)
            except _FormatRefused:
                self.formats.refused("json_schema")
                return self._send(messages, schema)


def create_embedder(cfg: EmbeddingConfig, *, backoff: Backoff | None = None) -> RemoteEmbedder:
    """The registry's entry point for Ollama embeddings."""
    return RemoteEmbedder("ollama", cfg, _Connection(cfg, backoff).embed)


def create_chat(cfg: LLMConfig, *, backoff: Backoff | None = None) -> OllamaChat:
    """The registry's entry point for Ollama chat."""
    return OllamaChat(cfg, backoff=backoff)
