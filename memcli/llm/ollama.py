"""Ollama through its official client: embeddings from /api/embed, chat from /api/chat."""

from __future__ import annotations

import json
from typing import Any

import ollama
import pydantic

from memcli.config import EmbeddingConfig, LLMConfig
from memcli.llm import BaseChat, ChatReply, retry
from memcli.llm.embedder import RemoteEmbedder
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


class OllamaChat(BaseChat):
    """Chat through /api/chat; a schema is passed natively as `format`."""

    provider = "ollama"

    def __init__(self, cfg: LLMConfig, *, backoff: Backoff | None = None) -> None:
        super().__init__(cfg)
        self._conn = _Connection(cfg, backoff)

    def chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        """The model's reply to `messages`, constrained to `schema` when one is given."""
        # Validated here, outside the retry loop, so a malformed message is a plain bug
        # rather than something mistaken for a bad server reply.
        prepared = [ollama.Message.model_validate(m) for m in messages]

        def request() -> ChatReply:
            response = self._conn.client.chat(
                model=self.model,
                messages=prepared,
                format=schema,
                options={"temperature": self.temperature},
                stream=False,
            )
            return ChatReply(
                text=response.message.content or "",
                prompt_tokens=response.prompt_eval_count or 0,
                completion_tokens=response.eval_count or 0,
            )

        with self._slots:
            return self._conn.call(request)


def create_embedder(cfg: EmbeddingConfig, *, backoff: Backoff | None = None) -> RemoteEmbedder:
    """The registry's entry point for Ollama embeddings."""
    return RemoteEmbedder("ollama", cfg, _Connection(cfg, backoff).embed)


def create_chat(cfg: LLMConfig, *, backoff: Backoff | None = None) -> OllamaChat:
    """The registry's entry point for Ollama chat."""
    return OllamaChat(cfg, backoff=backoff)
