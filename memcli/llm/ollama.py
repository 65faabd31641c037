"""Ollama through its official client: embeddings from /api/embed, chat from /api/chat."""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np
import ollama
import pydantic

from memcli.config import EmbeddingConfig, LLMConfig
from memcli.llm import ChatReply, unit_rows
from memcli.llm.retry import (
    Backoff,
    BadReply,
    BadStatus,
    Endpoint,
    with_retries,
)

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

    def __init__(
        self, url: str | None, model: str, timeout: float, max_retries: int, backoff: Backoff
    ) -> None:
        address = url or DEFAULT_URL
        self.client = ollama.Client(host=address, timeout=timeout)
        self.endpoint = _endpoint(address, model, timeout)
        self.max_retries = max_retries
        self.backoff = backoff

    def call(self, request: Any) -> Any:
        """Run `request()` against the server with retries and memcli errors."""

        def attempt() -> Any:
            try:
                return request()
            except ollama.ResponseError as exc:
                raise BadStatus(exc.status_code, str(exc.error)) from None
            except json.JSONDecodeError:
                raise BadReply("the body is not JSON") from None
            except (pydantic.ValidationError, TypeError):
                # The client builds its response model from the body; a body of the wrong
                # shape fails there.
                raise BadReply("the body is not the expected JSON reply") from None

        return with_retries(
            attempt, endpoint=self.endpoint, max_retries=self.max_retries, backoff=self.backoff
        )


class OllamaEmbedder:
    """Embeddings from an Ollama server, sent in batches of `batch_size` texts."""

    provider = "ollama"

    def __init__(self, cfg: EmbeddingConfig, *, backoff: Backoff | None = None) -> None:
        self.model = cfg.model
        self.batch_size = max(1, cfg.batch_size)
        retries = cfg.max_retries
        self._conn = _Connection(cfg.url, cfg.model, cfg.timeout, retries, backoff or Backoff())
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """Vector length; learnt from the first reply, or from a one-word probe."""
        if self._dim is None:
            self.embed(["probe"])
        assert self._dim is not None
        return self._dim

    def _embed_batch(self, batch: list[str]) -> list[Any]:
        def request() -> list[Any]:
            vectors = list(self._conn.client.embed(model=self.model, input=batch).embeddings)
            if len(vectors) != len(batch):
                raise BadReply(f"{len(vectors)} embeddings for {len(batch)} texts")
            if len({len(v) for v in vectors}) > 1:
                raise BadReply("embeddings of different lengths in one reply")
            return vectors

        return self._conn.call(request)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[Any] = []
        for start in range(0, len(texts), self.batch_size):
            rows.extend(self._embed_batch(texts[start : start + self.batch_size]))
        matrix = unit_rows(rows)
        self._dim = int(matrix.shape[1])
        return matrix


class OllamaChat:
    """Chat through /api/chat; a schema is passed natively as `format`."""

    provider = "ollama"

    def __init__(self, cfg: LLMConfig, *, backoff: Backoff | None = None) -> None:
        self.model = cfg.model
        self.temperature = cfg.temperature
        self._conn = _Connection(
            cfg.url, cfg.model, cfg.timeout, cfg.max_retries, backoff or Backoff()
        )
        # Bounds requests in flight when callers share this model across threads.
        self._slots = threading.BoundedSemaphore(max(1, cfg.concurrency))

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


def create_embedder(cfg: EmbeddingConfig, *, backoff: Backoff | None = None) -> OllamaEmbedder:
    """The registry's entry point for Ollama embeddings."""
    return OllamaEmbedder(cfg, backoff=backoff)


def create_chat(cfg: LLMConfig, *, backoff: Backoff | None = None) -> OllamaChat:
    """The registry's entry point for Ollama chat."""
    return OllamaChat(cfg, backoff=backoff)
