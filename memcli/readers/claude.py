"""Claude's data export: `conversations.json`, a list of conversations, each with `uuid`,
`name`, `created_at` and `chat_messages`.

A message carries `sender` (`human` or `assistant`, stored as the speaker `user` or
`assistant`, as ChatGPT names them), `created_at` (the time, stored as UTC wall time like
ChatGPT's), `uuid` (the ref), and its words as `text` and/or `content` blocks. The `text`
blocks are the turn; `thinking`, `tool_use` and `tool_result` blocks are the model's working and
are left out. Files the message carried (`attachments`, `files`) are noted by name as
`[attached file: NAME]`; their extracted contents are not stored. When the conversation
names its `current_leaf_message_uuid` and messages link to their parents, only that branch
is stored (as in the app); otherwise the messages in file order. Each conversation is one
session (see memcli.readers.exports); its id and title are props.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memcli.models import BadRecord, Episode
from memcli.readers import exports
from memcli.readers.jsonl import json_type

NAME = "claude"
SUFFIXES = (".json",)

_CONTAINER = "conversations"  # some exports wrap the list in an object under this key
# Claude says "human"; stored as ChatGPT's "user", so both services' turns read alike.
_SPEAKERS = {"human": exports.USER, "assistant": exports.ASSISTANT}


def read(text: str, name: str, default_session: str) -> Iterator[Episode | BadRecord]:
    """Yield one Episode per message with words, conversation by conversation."""
    return exports.read_conversations(text, "Claude", _CONTAINER, _conversation)


def sniff(text: str, data: Any) -> bool:
    """True for a conversation (or a list starting with one) that has `chat_messages`."""
    first = exports.first_conversation(data, _CONTAINER)
    return first is not None and isinstance(first.get("chat_messages"), list)


def _conversation(conv: dict[str, Any], line: int) -> Iterator[Episode | BadRecord]:
    conv_id = exports.text_field(conv, "uuid")
    title = exports.text_field(conv, "name")
    where, session, props = exports.framing(title, conv_id, line)
    messages = conv.get("chat_messages")
    if not isinstance(messages, list):
        yield BadRecord(line, f"{where}: 'chat_messages' must be a list, not {json_type(messages)}")
        return
    for number, message in enumerate(_current_branch(conv, messages)):
        if not isinstance(message, dict):
            reason = f"{where}: message {number + 1} is {json_type(message)}, not an object"
            yield BadRecord(line, reason)
            continue
        item = _episode(message, line, where, session, props)
        if item is not None:
            yield item


def _current_branch(conv: dict[str, Any], messages: list[Any]) -> list[Any]:
    """The messages of the branch ending at the current leaf, or all of them in order."""
    leaf = conv.get("current_leaf_message_uuid")
    by_id = {
        m["uuid"]: m for m in messages if isinstance(m, dict) and isinstance(m.get("uuid"), str)
    }
    parents = {
        uid: m.get("parent_message_uuid") if isinstance(m.get("parent_message_uuid"), str) else None
        for uid, m in by_id.items()
    }
    if not (isinstance(leaf, str) and leaf in by_id and any(parents.values())):
        return messages
    return [by_id[uid] for uid in exports.branch(parents, leaf)]


def _text_blocks(blocks: Any) -> list[str]:
    """The words of a message's `text` content blocks."""
    if not isinstance(blocks, list):
        return []
    return [
        b["text"]
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _file_names(message: dict[str, Any]) -> list[str]:
    """Names of the files a message carried."""
    names = []
    for key in ("attachments", "files"):
        files = message.get(key)
        for item in files if isinstance(files, list) else []:
            name = exports.text_field(item, "file_name") if isinstance(item, dict) else None
            if name:
                names.append(name.strip())
    return names


def _message_text(message: dict[str, Any]) -> str:
    """The turn's words: its text blocks (else `text`), then the files it carried."""
    texts = _text_blocks(message.get("content"))
    if not any(t.strip() for t in texts):
        texts = [message["text"]] if isinstance(message.get("text"), str) else []
    marks = exports.attachment_marks(_file_names(message))
    return "\n\n".join(t.strip() for t in [*texts, marks] if t.strip())


def _episode(
    message: dict[str, Any], line: int, where: str, session: str, props: dict[str, Any]
) -> Episode | BadRecord | None:
    sender = exports.text_field(message, "sender")
    stamp = exports.text_field(message, "created_at")
    return exports.episode(
        _message_text(message), line, where,
        speaker=_SPEAKERS.get(sender or "", sender),
        session=session,
        timestamp=exports.utc_time(stamp) if stamp else None,
        timestamp_raw=stamp,
        ref=exports.text_field(message, "uuid"),
        props=dict(props),
    )  # fmt: skip
