"""Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, LM Studio...) over plain httpx."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import httpx

from memcli.config import EmbeddingConfig, LLMConfig
from memcli.llm import BaseChat, ChatReply
from memcli.llm.embedder import RemoteEmbedder
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
from memcli.text import hide_secret

T = TypeVar("T")

DEFAULT_URL = "https://api.openai.com/v1"
NAME = "the OpenAI-compatible server"

# Servers that do not know json_schema reject it with 400; FastAPI-based ones answer 422.
_SCHEMA_REJECTION_STATUSES = (400, 422)


class _SchemaRejected(Exception):
    """The server refused response_format json_schema (not caught by the retry loop)."""


def _server_message(response: httpx.Response) -> str:
    """The error text a server put in its body: OpenAI's error.message, or what there is."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error:
            return str(error)[:300]
    return json.dumps(body)[:300]


def _rejects_schema(status: int, message: str) -> bool:
    return status in _SCHEMA_REJECTION_STATUSES and bool(
        re.search(r"response_format|json_schema", message, re.IGNORECASE)
    )


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
        schema_sent: bool = False,
    ) -> T:
        """POST JSON, check the answer and turn its body into a result with `parse`."""

        def attempt() -> T:
            response = self.http.post(path, json=payload)
            if response.status_code >= 400:
                message = self._scrub(_server_message(response))
                if schema_sent and _rejects_schema(response.status_code, message):
                    raise _SchemaRejected
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                raise BadStatus(response.status_code, message, retry_after)
            try:
                body = response.json()
            except ValueError:
                raise BadReply(BadReply.NOT_JSON) from None
            try:
                return parse(body)
            except (KeyError, IndexError, TypeError, AttributeError, ValueError):
                raise BadReply(BadReply.WRONG_SHAPE) from None

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
    return ChatReply(
        text=body["choices"][0]["message"].get("content") or "",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


def _schema_name(schema: dict[str, Any]) -> str:
    # OpenAI allows letters, digits, _ and - up to 64 characters.
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "reply"))
    return name[:64]


class OpenAIChat(BaseChat):
    """Chat through POST /chat/completions; a schema goes in `response_format`."""

    provider = "openai"

    def __init__(self, cfg: LLMConfig, *, backoff: Backoff | None = None) -> None:
        super().__init__(cfg)
        self._conn = _Connection(cfg, backoff)
        # Set once the server has refused json_schema, so later calls skip the doomed try.
        self.json_object_only = False

    def _complete(
        self, messages: list[dict[str, str]], response_format: dict[str, Any] | None
    ) -> ChatReply:
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if response_format is not None:
            payload["response_format"] = response_format
        return self._conn.post(
            "/chat/completions",
            payload,
            _parse_completion,
            schema_sent=response_format is not None and response_format["type"] == "json_schema",
        )

    def _chat_json_object(
        self, messages: list[dict[str, str]], schema: dict[str, Any]
    ) -> ChatReply:
        # json_object mode checks syntax only, so the schema travels in the prompt instead.
        # (It also satisfies OpenAI's rule that the messages mention JSON in this mode.)
        guide = "Reply with one JSON object that fits this JSON schema:\n" + json.dumps(schema)
        if messages and messages[0].get("role") == "system":
            # Many chat templates accept a single system message, and only first.
            first = {**messages[0], "content": f"{messages[0]['content']}\n\n{guide}"}
            prepared = [first, *messages[1:]]
        else:
            prepared = [{"role": "system", "content": guide}, *messages]
        return self._complete(prepared, {"type": "json_object"})

    def chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        """The model's reply to `messages`, constrained to `schema` when one is given."""
        with self._slots:
            if schema is None:
                return self._complete(messages, None)
            if not self.json_object_only:
                native = {"name": _schema_name(schema), "schema": schema, "strict": False}
                try:
                    return self._complete(messages, {"type": "json_schema", "json_schema": native})
                except _SchemaRejected:
                    self.json_object_only = True
            return self._chat_json_object(messages, schema)


def create_embedder(cfg: EmbeddingConfig, *, backoff: Backoff | None = None) -> RemoteEmbedder:
    """The registry's entry point for OpenAI-compatible embeddings."""
    return RemoteEmbedder("openai", cfg, _Connection(cfg, backoff).embed)


def create_chat(cfg: LLMConfig, *, backoff: Backoff | None = None) -> OpenAIChat:
    """The registry's entry point for OpenAI-compatible chat."""
    return OpenAIChat(cfg, backoff=backoff)
