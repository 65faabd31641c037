"""A ChatGPT export and a Claude export of the same exchange are stored alike: the same
speaker names (user, assistant) and the same UTC times."""

from __future__ import annotations

import json

from memcli.models import Episode
from memcli.readers import chatgpt, claude

AT = 1717316103  # 2024-06-02T08:15:03Z


def chatgpt_export() -> str:
    mapping = {"root": {"id": "root", "message": None, "parent": None}}
    parent = "root"
    for number, (role, text) in enumerate([("user", "Hello?"), ("assistant", "Hi there.")]):
        node = f"n{number}"
        message = {"id": node, "author": {"role": role}, "create_time": AT + number,
                   "content": {"content_type": "text", "parts": [text]}}  # fmt: skip
        mapping[node] = {"id": node, "message": message, "parent": parent}
        parent = node
    return json.dumps([{"title": "t", "id": "c1", "mapping": mapping, "current_node": parent}])


def claude_export() -> str:
    messages = [
        {"uuid": "m0", "sender": "human", "text": "Hello?", "created_at": "2024-06-02T08:15:03Z"},
        {"uuid": "m1", "sender": "assistant", "text": "Hi there.",
         "created_at": "2024-06-02T10:15:04+02:00"},
    ]  # fmt: skip
    return json.dumps([{"uuid": "c1", "name": "t", "chat_messages": messages}])


def test_both_services_store_the_same_speakers_and_times() -> None:
    def seen(items: list[Episode]) -> list[tuple[str | None, str | None, str]]:
        return [(e.speaker, e.timestamp, e.text) for e in items]

    from_chatgpt = [
        r for r in chatgpt.read(chatgpt_export(), "c.json", "c") if isinstance(r, Episode)
    ]
    from_claude = [r for r in claude.read(claude_export(), "c.json", "c") if isinstance(r, Episode)]
    expected = [
        ("user", "2024-06-02T08:15:03", "Hello?"),
        ("assistant", "2024-06-02T08:15:04", "Hi there."),
    ]
    assert seen(from_chatgpt) == expected
    assert seen(from_claude) == expected
