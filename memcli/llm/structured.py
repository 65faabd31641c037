"""Structured output: ask with a schema, repair, validate, re-ask with the error, give up politely.

Every question is paired with the pydantic model its reply must fit. Invalid output never
raises: the result carries `value=None` and the reason, and the caller counts the failure.
Provider errors (ProviderUnreachable) do propagate.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pydantic

from memcli.llm.window import PromptTooLong

if TYPE_CHECKING:
    from memcli.llm import ChatModel

M = TypeVar("M", bound=pydantic.BaseModel)

_FENCE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
# A JSON string (left alone) or a comma followed only by whitespace and a closing bracket.
_STRING_OR_TRAILING_COMMA = re.compile(r'"(?:\\.|[^"\\])*"|,(\s*[}\]])')
_OPENING = re.compile(r"[\[{]")


#: How a structured request ended (counted per stage: memcli.consolidate.stage).
OUTCOMES = ("first_try", "repaired", "reasked", "invalid", "cut")


@dataclass
class StructuredResult(Generic[M]):
    """A validated value (or None), what it took to get it, and why it failed if it did."""

    value: M | None
    attempts: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    repaired: bool = False  # the valid reply needed repair_json (fences, prose, commas)
    cut: bool = False  # a reply stopped at its token limit: nothing of it was used

    @property
    def ok(self) -> bool:
        """True when a valid value was obtained."""
        return self.value is not None

    @property
    def outcome(self) -> str:
        """first_try | repaired (valid on the first reply, after repair) | reasked (valid
        after a re-ask) | invalid (never valid) | cut (a reply hit its token limit)."""
        if self.cut:
            return "cut"
        if self.value is None:
            return "invalid"
        if self.attempts > 1:
            return "reasked"
        return "repaired" if self.repaired else "first_try"


def _unfence(text: str) -> str:
    match = _FENCE.search(text)
    return match.group(1) if match else text


def _drop_trailing_commas(text: str) -> str:
    return _STRING_OR_TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(0), text)


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket that closes the one at `start`, skipping JSON strings."""
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _parses(text: str) -> bool:
    try:
        json.loads(text, strict=False)
    except ValueError:
        return False
    return True


def repair_json(text: str) -> str:
    """Best-effort JSON out of a chatty reply: no fences, no prose around, no trailing commas
    (raw control characters inside strings are left for a lenient parse)."""
    body = _unfence(text).strip()
    first: str | None = None
    # Prose may hold brackets of its own ("[see below]"), so try each top-level bracketed
    # span in turn and keep the first that parses; spans are skipped whole to stay linear.
    opening = _OPENING.search(body)
    while opening is not None:
        start = opening.start()
        end = _balanced_end(body, start)
        candidate = _drop_trailing_commas(body[start:end] if end else body[start:])
        if _parses(candidate):
            return candidate
        if first is None:
            first = candidate
        if end is None:  # never closed (a cut-off reply): nothing after it is whole either
            break
        opening = _OPENING.search(body, end)
    return first if first is not None else _drop_trailing_commas(body)


def _describe_validation(exc: pydantic.ValidationError) -> str:
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "(top level)"
        problem = f"{where}: {err['msg']}"
        if err["type"] != "missing":
            problem += f" (got {json.dumps(err.get('input'), default=str)[:80]})"
        problems.append(problem)
    return "; ".join(problems)


def parse_reply(text: str, model_cls: type[M]) -> tuple[M | None, str | None]:
    """Parse, repair if needed, and validate one reply: (value, None) or (None, reason)."""
    value, error, _ = _parse(text, model_cls)
    return value, error


def _parse(text: str, model_cls: type[M]) -> tuple[M | None, str | None, bool]:
    """`parse_reply`, and whether the JSON needed repair."""
    if not text.strip():
        return None, "the reply was empty", False
    repaired = False
    try:
        data = json.loads(text)
    except ValueError as exc:
        try:
            # strict=False: a raw line break inside a string (small models write them)
            data = json.loads(repair_json(text), strict=False)
            repaired = True
        except ValueError:
            return None, f"the reply is not valid JSON ({exc})", False
    try:
        return model_cls.model_validate(data), None, repaired
    except pydantic.ValidationError as exc:
        return None, f"the JSON does not fit the schema: {_describe_validation(exc)}", repaired


def _reask(error: str) -> str:
    return (
        f"Your previous reply could not be used: {error}. "
        "Reply again with the corrected JSON only, fitting the schema, "
        "with no explanation and no code fences."
    )


def ask_structured(
    chat: ChatModel,
    messages: list[dict[str, str]],
    model_cls: type[M],
    *,
    max_reasks: int = 2,
) -> StructuredResult[M]:
    """Ask for a reply fitting `model_cls`, re-asking up to `max_reasks` times with the error.

    A reply cut by its token limit is never used, even when what came before the cut
    parses: the result is marked `cut` at once (asking the same again would be cut again;
    the caller asks about less). PromptTooLong from the model propagates."""
    schema = model_cls.model_json_schema()
    conversation = list(messages)
    result: StructuredResult[M] = StructuredResult(value=None, attempts=0)
    asked: list[list[dict[str, str]]] = []
    for _ in range(max(0, max_reasks) + 1):
        try:
            reply = chat.chat(conversation, schema=schema)
        except PromptTooLong:
            if not asked:
                raise
            break  # the re-ask, with the bad reply in it, no longer fits: give up on it
        asked.append(list(conversation))
        result.attempts += 1
        result.prompt_tokens += reply.prompt_tokens
        result.completion_tokens += reply.completion_tokens
        if reply.truncated:
            result.cut, result.error = True, "the reply stopped at its token limit"
            break
        value, error, repaired = _parse(reply.text, model_cls)
        if value is not None:
            result.value, result.error, result.repaired = value, None, repaired
            return result
        result.error = error
        conversation += [
            {"role": "assistant", "content": reply.text},
            {"role": "user", "content": _reask(error or "it was invalid")},
        ]
    _forget(chat, asked, schema)
    return result


def _forget(chat: ChatModel, asked: list[list[dict[str, str]]], schema: dict[str, Any]) -> None:
    """Nothing usable came back: a cache must not replay these replies on the next run."""
    discard = getattr(chat, "discard", None)
    if discard is not None:
        for sent in asked:
            discard(sent, schema)
