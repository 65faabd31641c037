"""What the chat services' own export readers share (ChatGPT, Claude).

Both exports are one `conversations.json`: a list of conversation objects, each holding its
messages. A conversation becomes one session; its name is the conversation's title followed
by the start of its id, because titles repeat ("New chat") and a session must not mix two
conversations. The name does not depend on the rest of the file, so ingesting a later,
larger export of the same account adds only what is new.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import timezone
from typing import Any

from memcli import dates
from memcli.models import BadRecord, Episode
from memcli.readers.jsonl import LineIndex, json_type, load_document, member_offsets, text_problem

#: The two speakers of a chat service's conversation, named alike for every service.
USER, ASSISTANT = "user", "assistant"

#: Characters of a conversation id kept in its session name.
ID_CHARS = 8
UNTITLED = "untitled"

#: Reads one conversation object (found at `line`) into records.
ConversationReader = Callable[[dict[str, Any], int], Iterator[Episode | BadRecord]]


def read_conversations(
    text: str, service: str, container_key: str | None, read_one: ConversationReader
) -> Iterator[Episode | BadRecord]:
    """Parse an export and hand each conversation object, with its line, to `read_one`.

    The document may be a list of conversations, one conversation, or (when
    `container_key` is given) an object holding the list under that key."""
    data = load_document(text)
    if isinstance(data, BadRecord):
        yield data
        return
    start = 0
    if container_key and isinstance(data, dict) and isinstance(data.get(container_key), list):
        start = member_offsets(text, 0).get(container_key, 0)
        data = data[container_key]
    if isinstance(data, dict):
        yield from read_one(data, LineIndex(text).line(start))
        return
    if not isinstance(data, list):
        yield BadRecord(1, f"expected a list of {service} conversations, not {json_type(data)}")
        return
    index, starts = LineIndex(text), member_offsets(text, start)
    for number, item in enumerate(data):
        line = index.line(starts.get(number, start))
        if isinstance(item, dict):
            yield from read_one(item, line)
        else:
            yield BadRecord(line, f"conversation {number + 1} is {json_type(item)}, not an object")


def first_conversation(data: Any, container_key: str | None = None) -> Any:
    """The first conversation object of a parsed export (for sniffing), or None."""
    if container_key and isinstance(data, dict) and isinstance(data.get(container_key), list):
        data = data[container_key]
    if isinstance(data, list):
        return data[0] if data and isinstance(data[0], dict) else None
    return data if isinstance(data, dict) else None


def text_field(obj: Mapping[str, Any], key: str) -> str | None:
    """`obj[key]` when it is a non-blank string, else None."""
    value = obj.get(key)
    return value if isinstance(value, str) and value.strip() else None


def session_name(title: str | None, conversation_id: str | None, fallback: int) -> str:
    """`Title [1a2b3c4d]`: the title keeps it readable, the id prefix keeps it unique."""
    shown = " ".join((title or UNTITLED).split())
    tag = (conversation_id or "").strip()[:ID_CHARS] or f"#{fallback}"
    return f"{shown} [{tag}]"


def framing(
    title: str | None, conversation_id: str | None, line: int
) -> tuple[str, str, dict[str, str]]:
    """What every message of a conversation shares: how errors name the conversation, its
    session name, and the props its episodes carry."""
    where = f"conversation {title or conversation_id or '(untitled)'!r}"
    props = {k: v for k, v in (("conversation_id", conversation_id), ("title", title)) if v}
    return where, session_name(title, conversation_id, line), props


def branch(parents: Mapping[str, str | None], leaf: str) -> list[str]:
    """The ids from the root down to `leaf`, following parent links (cycle-safe)."""
    path: list[str] = []
    seen: set[str] = set()
    node: str | None = leaf
    while node is not None and node in parents and node not in seen:
        seen.add(node)
        path.append(node)
        node = parents[node]
    path.reverse()
    return path


def attachment_marks(names: list[str]) -> str:
    """`[attached file: notes.txt]` lines for the files a message carried."""
    return "\n".join(f"[attached file: {name}]" for name in dict.fromkeys(names))


def episode(text: str, line: int, where: str, **fields: Any) -> Episode | BadRecord | None:
    """An Episode of non-blank text (None for blank text; a BadRecord when too large)."""
    if not text.strip():
        return None
    problem = text_problem(text)
    if problem:
        return BadRecord(line, f"{where}: {problem}")
    return Episode(text=text.strip(), line=line, **fields)


def utc_time(value: object) -> str | None:
    """A message time as both exports store it: UTC wall time, ISO, without an offset
    (Unix seconds from ChatGPT and `…Z` strings from Claude come out the same)."""
    iso = dates.normalize(value)
    moment = dates.parse_iso(iso)
    if moment is None or moment.tzinfo is None:
        return iso
    return moment.astimezone(timezone.utc).replace(tzinfo=None).isoformat()
