"""ChatGPT's data export: `conversations.json`, a list of conversations whose messages form
a tree (`mapping`: node id -> {message, parent, children}).

Only the branch the user last saw is stored: from `current_node` up through the parents to
the root, read top-down. Regenerated answers and edited questions stay in the tree as other
branches and are left out. (Without a usable `current_node`, the newest message ends the
branch.) Each conversation is one session (see memcli.readers.exports).

A message becomes an episode when the user or the assistant said it in the conversation:
role `user` or `assistant`, addressed to everyone (an assistant message to a tool is a tool
call), not hidden from the conversation, with text content (`text`, or the text parts of
`multimodal_text`, voice transcripts included; uploaded files are noted as
`[attached file: NAME]`, images are dropped). System prompts, custom instructions, tool
output, browsing quotes and the model's reasoning are skipped. `create_time` (Unix seconds)
is the time and the message id the ref; the model, conversation id and title are props.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from memcli.models import BadRecord, Episode
from memcli.readers import exports
from memcli.readers.jsonl import json_type

NAME = "chatgpt"
SUFFIXES = (".json",)

_SPEAKING_ROLES = ("user", "assistant")
_TEXT_CONTENT = ("text", "multimodal_text")
_TEXT_PARTS = ("text", "audio_transcription")


def read(text: str, name: str, default_session: str) -> Iterator[Episode | BadRecord]:
    """Yield one Episode per spoken message on each conversation's current branch."""
    return exports.read_conversations(text, "ChatGPT", None, _conversation)


def sniff(text: str, data: Any) -> bool:
    """True for a conversation (or a list starting with one) that has a `mapping` tree."""
    first = exports.first_conversation(data)
    return first is not None and isinstance(first.get("mapping"), dict)


def _conversation(conv: dict[str, Any], line: int) -> Iterator[Episode | BadRecord]:
    conv_id = exports.text_field(conv, "conversation_id") or exports.text_field(conv, "id")
    title = exports.text_field(conv, "title")
    where, session, props = exports.framing(title, conv_id, line)
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        yield BadRecord(line, f"{where}: 'mapping' must be an object, not {json_type(mapping)}")
        return
    for node_id in _current_branch(mapping, conv.get("current_node")):
        message = mapping[node_id].get("message")
        if isinstance(message, dict) and _spoken(message):
            item = _episode(message, line, where, session, props)
            if item is not None:
                yield item


def _parent_links(mapping: dict[str, Any]) -> dict[str, str | None]:
    links: dict[str, str | None] = {}
    for node_id, node in mapping.items():
        if isinstance(node, dict):
            parent = node.get("parent")
            links[node_id] = parent if isinstance(parent, str) else None
    return links


def _current_branch(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to the current node (or to the newest message)."""
    parents = _parent_links(mapping)
    if not (isinstance(current, str) and current in parents):
        timed = [(_create_time(mapping[n]), n) for n in parents]
        timed = [(t, n) for t, n in timed if t is not None]
        if not timed:
            return []
        current = max(timed)[1]
    return exports.branch(parents, current)


def _create_time(node: dict[str, Any]) -> float | None:
    message = node.get("message")
    stamp = message.get("create_time") if isinstance(message, dict) else None
    return float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) else None


def _spoken(message: dict[str, Any]) -> bool:
    """Whether a message is a turn of the visible conversation."""
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    metadata = message.get("metadata")
    hidden = isinstance(metadata, dict) and bool(
        metadata.get("is_visually_hidden_from_conversation")
    )
    recipient = message.get("recipient", "all")
    content = message.get("content")
    kind = content.get("content_type", "text") if isinstance(content, dict) else None
    addressed = recipient in ("all", None)
    return role in _SPEAKING_ROLES and kind in _TEXT_CONTENT and addressed and not hidden


def _message_text(message: dict[str, Any]) -> str | None:
    """The message's words (None when its parts are malformed)."""
    content = message["content"]
    parts = content.get("parts")
    if parts is None and isinstance(content.get("text"), str):
        parts = [content["text"]]
    if not isinstance(parts, list):
        return None
    texts = [p for p in parts if isinstance(p, str)]
    texts += [
        p["text"]
        for p in parts
        if isinstance(p, dict)
        and p.get("content_type") in _TEXT_PARTS
        and isinstance(p.get("text"), str)
    ]
    metadata = message.get("metadata")
    files = metadata.get("attachments") if isinstance(metadata, dict) else None
    names = [
        f["name"] for f in files or [] if isinstance(f, dict) and isinstance(f.get("name"), str)
    ]
    return "\n".join(t for t in [*texts, exports.attachment_marks(names)] if t.strip())


def _episode(
    message: dict[str, Any], line: int, where: str, session: str, props: dict[str, Any]
) -> Episode | BadRecord | None:
    text = _message_text(message)
    ref = exports.text_field(message, "id")
    if text is None:
        return BadRecord(line, f"{where}: message {ref}: 'parts' must be a list")
    stamp = message.get("create_time")
    number = isinstance(stamp, (int, float)) and not isinstance(stamp, bool)
    metadata = message.get("metadata")
    model = exports.text_field(metadata, "model_slug") if isinstance(metadata, dict) else None
    return exports.episode(
        text, line, where,
        speaker=message["author"]["role"],
        session=session,
        timestamp=exports.utc_time(stamp) if number else None,
        timestamp_raw=json.dumps(stamp) if number else None,
        ref=ref,
        props={**props, **({"model": model} if model else {})},
    )  # fmt: skip
