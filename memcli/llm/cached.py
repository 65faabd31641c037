"""A chat model wrapper that answers repeated prompts from the store's `llm_cache`."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.llm import ChatModel, ChatReply

if TYPE_CHECKING:
    from memcli.store import Store


@dataclass
class Usage:
    """Model calls and tokens, counted as they happen (thread-safe)."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, reply: ChatReply, cached: bool) -> None:
        with self._lock:
            if cached:
                self.cache_hits += 1
            else:
                self.calls += 1
                self.prompt_tokens += reply.prompt_tokens
                self.completion_tokens += reply.completion_tokens

    def snapshot(self) -> dict[str, int]:
        """The counters as a plain dict."""
        with self._lock:
            return {
                "llm_calls": self.calls,
                "cache_hits": self.cache_hits,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            }


def cache_key(provider: str, model: str, messages: list[dict[str, str]], schema: Any) -> str:
    """Identity of a request: provider, model, the rendered messages and the schema."""
    blob = json.dumps([provider, model, messages, schema], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class CachedChat:
    """Wraps a ChatModel: a request seen before is answered from the store, not the model.

    Never call it inside a write transaction: cache rows commit on their own, so a run
    that crashes after a call does not pay for that call again.
    """

    def __init__(self, inner: ChatModel, store: Store, usage: Usage | None = None) -> None:
        self.inner = inner
        self.store = store
        self.provider = inner.provider
        self.model = inner.model
        self.usage = usage or Usage()

    def chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        """The cached reply for this exact request, or the model's (then cached)."""
        from memcli.store.work import CachedReply

        key = cache_key(self.provider, self.model, messages, schema)
        hit = self.store.cache_get(key)
        if hit is not None:
            reply = ChatReply(hit.response, hit.prompt_tokens, hit.completion_tokens)
            self.usage.add(reply, cached=True)
            return reply
        reply = self.inner.chat(messages, schema=schema)
        if reply.truncated:  # never replayed: it would pass for a whole reply
            self.usage.add(reply, cached=False)
            return reply
        self.store.cache_put(
            key,
            self.provider,
            self.model,
            CachedReply(reply.text, reply.prompt_tokens, reply.completion_tokens),
        )
        self.usage.add(reply, cached=False)
        return reply

    def discard(self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None) -> None:
        """Forget the cached reply to this request (it proved unusable)."""
        self.store.cache_delete(cache_key(self.provider, self.model, messages, schema))
