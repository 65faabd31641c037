"""The answer step of `ask`: packed memory and a question in, an answer citing node ids out.

The reply must fit `AnswerReply`; `ask_structured` repairs and re-asks. When every reply
stayed invalid, the most recent one that still carries an answer string is used with a
looser reading of its citations, so only a model that never produced an answer is a
failure. Citations are checked against the ids the prompt showed: anything else is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import pydantic

from memcli.llm import ChatReply
from memcli.llm.structured import ask_structured, parse_reply
from memcli.models import parse_node_id
from memcli.prompting import data_block, render

if TYPE_CHECKING:
    from memcli.llm import ChatModel

# An id leading a context line: "[ep12] Ann: ..." or "- [fa3] ...".
_ITEM_ID = re.compile(r"^[ \t]*(?:[-*][ \t]+)?\[([a-z]{2}\d+)\]", re.MULTILINE)
# An id written into the answer text itself, e.g. "... in May [ep4]."
_INLINE_ID = re.compile(r"\[([A-Za-z]{2}\d+)\]")
_ID_SEPARATORS = re.compile(r"[\s,;]+")

#: What `ask` says, without calling a model, when retrieval found nothing to answer from.
NO_MEMORY = "The memory holds nothing that matches this question."

AnswerText = Annotated[str, pydantic.StringConstraints(strip_whitespace=True, min_length=1)]


class AnswerReply(pydantic.BaseModel):
    """The reply the `answer` prompt asks for."""

    answer: AnswerText
    citations: list[str]


class _LooseReply(pydantic.BaseModel):
    """A last-resort reading: an answer string, with citations in whatever shape they came."""

    answer: AnswerText
    citations: list[str] = []

    @pydantic.field_validator("citations", mode="before")
    @classmethod
    def _any_shape(cls, value: Any) -> list[str]:
        if value is None:
            return []
        if isinstance(value, (str, int)):
            return [str(value)]
        if isinstance(value, list):
            return [str(v) for v in value if isinstance(v, (str, int))]
        return []


@dataclass
class AnswerResult:
    """An answer (None when the model never gave a usable one), its checked citations, cost."""

    answer: str | None
    citations: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # cited ids the prompt never showed
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None  # why the replies were invalid, when they were
    usage: dict[str, int] = field(default_factory=dict)  # llm_calls and cache_hits, when known
    # How the request ended (memcli.llm.structured.OUTCOMES), or "salvaged": no reply fit
    # the schema but one still carried an answer; "none": nothing was asked.
    outcome: str = "none"

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens of every attempt (cached replies included)."""
        return self.prompt_tokens + self.completion_tokens


class _Transcript:
    """Passes calls through to a chat model and keeps the text of every reply."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.provider = inner.provider
        self.model = inner.model
        self.replies: list[str] = []

    def chat(
        self, messages: list[dict[str, str]], schema: dict[str, Any] | None = None
    ) -> ChatReply:
        reply = self.inner.chat(messages, schema=schema)
        self.replies.append(reply.text)
        return reply


def context_ids(context: str) -> set[str]:
    """The citable node ids that lead items of a packed context."""
    return {i for i in _ITEM_ID.findall(context) if parse_node_id(i) is not None}


def _salvage(replies: list[str]) -> _LooseReply | None:
    for text in reversed(replies):
        value, _ = parse_reply(text, _LooseReply)
        if value is not None:
            return value
    return None


def check_citations(cited: list[str], answer: str, shown: set[str]) -> tuple[list[str], list[str]]:
    """(kept, dropped): cited ids plus ids written in the answer, split by whether shown."""
    kept: list[str] = []
    dropped: list[str] = []
    wanted = [*cited, *_INLINE_ID.findall(answer)]
    for entry in wanted:
        for raw in _ID_SEPARATORS.split(entry):
            node_id = raw.strip("[]()'\"").lower()
            if not node_id:
                continue
            bucket = kept if node_id in shown else dropped
            if node_id not in bucket:
                bucket.append(node_id)
    return kept, dropped


def answer_question(
    chat: ChatModel, question: str, context: str, prompts_dir: str | None = None
) -> AnswerResult:
    """Ask `chat` to answer `question` from the packed `context`, citing the ids it shows."""
    prompt = render("answer", prompts_dir, question=question.strip(), memory=data_block(context))
    if not context.strip():
        # Nothing was retrieved: the honest answer needs no model (and costs nothing).
        return AnswerResult(answer=NO_MEMORY)
    transcript = _Transcript(chat)
    result = ask_structured(transcript, [{"role": "user", "content": prompt}], AnswerReply)
    reply: AnswerReply | _LooseReply | None = result.value or _salvage(transcript.replies)
    out = AnswerResult(
        answer=None,
        attempts=result.attempts,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        error=result.error,
        outcome=result.outcome,
    )
    if reply is not None:
        if result.value is None:
            out.outcome = "salvaged"
        out.answer = reply.answer
        out.citations, out.dropped = check_citations(
            reply.citations, reply.answer, context_ids(context)
        )
    return out
