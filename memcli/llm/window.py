"""A chat model's context window: how many tokens a prompt may take, and how many the reply.

memcli counts tokens with its own estimate (`memcli.text.count_tokens`, words and marks);
a model's tokenizer usually makes more of them. The window keeps the ratio between the two,
learned from the prompt sizes servers report, so a prompt is known not to fit before it is
sent. Where the size comes from, in order: `llm.context_length`; what the server says
(llama.cpp's /props, vLLM's /v1/models, Ollama's /api/show); what a server said when it
refused a prompt as too long; else `DEFAULT_CONTEXT`.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from memcli.errors import ProviderUnreachable
from memcli.text import count_tokens

#: Tokens assumed when neither the config nor the server says (most servers give more).
DEFAULT_CONTEXT = 8192
#: The reply gets this share of the window, up to `MAX_REPLY` (llm.max_tokens overrides).
REPLY_SHARE = 4
MAX_REPLY = 2048
#: Tokens a chat template adds around each message (role markers), and a little slack.
PER_MESSAGE = 8
SLACK = 16
#: Server tokens per estimated token before any server has said: English text makes
#: about 1.1 with common tokenizers; the margin covers the first call.
START_RATIO = 1.25

# "maximum context length is 2048 tokens" (OpenAI, vLLM, llama-cpp-python),
# "n_ctx": 4096 in llama.cpp's exceed_context_size_error body.
_STATED_LIMIT = re.compile(
    r"(?:maximum context length|context (?:window|length|size))\D{0,20}?(\d{3,7})", re.I
)
_REQUESTED = re.compile(r"requested (\d+) tokens \((\d+) in the messages", re.I)
_TOO_LONG = re.compile(
    r"context.?length.?exceeded|exceed\w*[ _]context|maximum context length|context window|"
    r"too many tokens|prompt is too long|exceeds? the (?:available )?context",
    re.I,
)


class PromptTooLong(ProviderUnreachable):
    """A prompt (with room for the reply) is larger than the model's context window."""

    def __init__(self, message: str, limit: int | None = None) -> None:
        super().__init__(
            message,
            fix="set llm.context_length to the window the server runs with (llama.cpp: "
            "--n_ctx; Ollama: num_ctx), or lower consolidation.chunk_tokens / "
            "retrieval.word_budget",
        )
        self.limit = limit


def refused_as_too_long(status: int, body_text: str) -> bool:
    """Whether an HTTP error answer says the prompt did not fit the context."""
    return status in (400, 413, 422, 500) and bool(_TOO_LONG.search(body_text))


def stated_limit(body: Any, text: str) -> int | None:
    """The context size an error answer states, if it states one."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("n_ctx"), int):
            return int(error["n_ctx"])
    match = _STATED_LIMIT.search(text)
    return int(match.group(1)) if match else None


def stated_prompt_tokens(text: str) -> int | None:
    """The prompt tokens an error answer says the request had ("3031 in the messages")."""
    match = _REQUESTED.search(text)
    return int(match.group(2)) if match else None


def estimate(messages: list[dict[str, str]]) -> int:
    """memcli's own token estimate of a list of chat messages."""
    return sum(count_tokens(str(m.get("content") or "")) + PER_MESSAGE for m in messages)


@dataclass
class Window:
    """The context size of one model on one server, and the reply's share of it."""

    context: int
    source: str  # "config" | "server" | "server error" | "default"
    max_reply: int = 0  # llm.max_tokens; 0 = a quarter of the window, at most MAX_REPLY
    ratio: float = START_RATIO
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def reply(self) -> int:
        """Tokens the reply may take (sent as max_tokens / num_predict)."""
        if self.max_reply:
            return min(self.max_reply, self.context // 2)
        return min(MAX_REPLY, self.context // REPLY_SHARE)

    @property
    def prompt_budget(self) -> int:
        """Server tokens a prompt may take."""
        return self.context - self.reply - SLACK

    def server_tokens(self, messages: list[dict[str, str]]) -> int:
        """The expected server-side token count of `messages`."""
        return int(estimate(messages) * self.ratio) + 1

    def fits(self, messages: list[dict[str, str]]) -> bool:
        """True when `messages` leave the reply its room in the window."""
        return self.server_tokens(messages) <= self.prompt_budget

    def learn(self, messages: list[dict[str, str]], server_count: int) -> None:
        """Take in a prompt size the server reported: the ratio only grows."""
        if server_count <= 0:
            return
        ratio = server_count / max(1, estimate(messages))
        with self._lock:
            self.ratio = max(self.ratio, ratio)

    def shrink(self, limit: int | None) -> bool:
        """Take in a smaller context size a server stated; True when it changed."""
        with self._lock:
            if limit is None or limit >= self.context or limit < 256:
                return False
            self.context, self.source = limit, "server error"
            return True

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary (doctor, reports)."""
        return {
            "context_length": self.context,
            "source": self.source,
            "reply_tokens": self.reply,
            "prompt_budget": self.prompt_budget,
            "tokens_per_estimate": round(self.ratio, 3),
        }
