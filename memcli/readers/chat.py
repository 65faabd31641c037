"""OpenAI-style chat JSON: `{"messages": [...]}` or a bare list of `{role, content}` objects.

`content` may be a string or a list of parts; the `text` parts are joined with newlines and
other parts (images, audio) are dropped. A message left with no text at all (a tool call,
an empty system prompt) is skipped silently: it is not a turn anyone said. Each message
otherwise follows the JSONL field rules (`name` beats `role` as the speaker, `id` is the
ref, extra keys become props). A top-level `session` (or `id`) names the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memcli.models import BadRecord, Episode
from memcli.readers.jsonl import LineIndex, json_type, load_document, member_offsets, to_episode

NAME = "chat"
SUFFIXES = (".json",)

_TEXT_PART_TYPES = ("text", "input_text", "output_text")


def read(text: str, name: str, default_session: str) -> Iterator[Episode | BadRecord]:
    """Yield one Episode per message that has text, BadRecords for malformed messages."""
    data = load_document(text)
    if isinstance(data, BadRecord):
        yield data
        return
    messages, session, path = _messages(data, default_session)
    if messages is None:
        yield BadRecord(1, 'expected {"messages": [...]} or a list of {role, content} objects')
        return
    lines = _message_lines(text, path)
    for index, message in enumerate(messages):
        line = lines.get(index, 1)
        if not isinstance(message, dict):
            yield BadRecord(line, f"message {index + 1} is {json_type(message)}, not an object")
            continue
        record = _flatten(message, line)
        if isinstance(record, dict):
            yield to_episode(record, line, session)
        elif record is not None:
            yield record


def sniff(text: str, data: Any) -> bool:
    """True for a `{"messages": [...]}` object or a list whose first item has role and content."""
    if isinstance(data, dict):
        return isinstance(data.get("messages"), list)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return "role" in data[0] and "content" in data[0]
    return False


def _messages(data: Any, default_session: str) -> tuple[list[Any] | None, str, tuple[str, ...]]:
    """The message list, the session its turns default to, and the list's key path."""
    if isinstance(data, list):
        return data, default_session, ()
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return None, default_session, ()
    named = next(
        (
            data[key]
            for key in ("session", "id")
            if isinstance(data.get(key), (str, int)) and not isinstance(data[key], bool)
        ),
        None,
    )
    session = str(named) if named not in (None, "") else default_session
    return data["messages"], session, ("messages",)


def _message_lines(text: str, path: tuple[str, ...]) -> dict[str | int, int]:
    """Line where each message's object starts, keyed by its index in the list."""
    index = LineIndex(text)
    start = 0
    for key in path:
        start = member_offsets(text, start).get(key, -1)
        if start < 0:
            return {}
    return {key: index.line(at) for key, at in member_offsets(text, start).items()}


def _flatten(message: dict[str, Any], line: int) -> dict[str, Any] | BadRecord | None:
    """The message with `content` reduced to one string; None when it carries no text."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(_part_texts(content))
    elif content is not None and not isinstance(content, str):
        return BadRecord(
            line, f"'content' must be a string or a list of parts, not {json_type(content)}"
        )
    if not content or not content.strip():
        return None
    return {**message, "content": content}


def _part_texts(parts: list[Any]) -> Iterator[str]:
    """The text of each text part (a bare string counts as one)."""
    for part in parts:
        if isinstance(part, str):
            yield part
        elif isinstance(part, dict) and part.get("type", "text") in _TEXT_PART_TYPES:
            text = part.get("text")
            if isinstance(text, str) and text:
                yield text
