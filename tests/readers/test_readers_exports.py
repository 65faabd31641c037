"""The chat services' exports: ChatGPT's and Claude's conversations.json (hand-made fixtures
in the real shape), detection by content, and ingesting them through the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from memcli.models import BadRecord, Episode
from memcli.readers import FORMATS, chatgpt, claude, detect_format, read_source
from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer
from tests.paths import DATA

DATA = DATA / "readers"
CHATGPT = DATA / "chatgpt-conversations.json"
CLAUDE = DATA / "claude-conversations.json"


def records(module: Any, data: Any) -> list[Episode | BadRecord]:
    text = data if isinstance(data, str) else json.dumps(data, indent=1)
    return list(module.read(text, "conversations.json", "conversations"))


def summary(items: list[Episode | BadRecord]) -> list[tuple[Any, ...]]:
    return [
        (r.speaker, r.session, r.ref, r.timestamp, r.text) if isinstance(r, Episode) else r
        for r in items
    ]


# --- ChatGPT ----------------------------------------------------------------------------


def test_chatgpt_follows_the_current_branch_and_keeps_only_spoken_turns() -> None:
    items = records(chatgpt, CHATGPT.read_text())
    bike = "Bike chain keeps slipping [5f0c1e2a]"
    assert summary(items) == [
        # The hidden system prompt, the custom instructions, the regenerated first answer
        # (another branch), the reasoning, the tool call and the tool's output are left out.
        ("user", bike, "u-1", "2024-04-29T08:40:10",
         "My chain skips under load on the two smallest cogs."),
        ("assistant", bike, "a-2", "2024-04-29T08:40:40",
         "Measure chain wear first; past 0.75% replace the chain and probably those cogs."),
        # multimodal: text parts and the voice transcript, the image dropped, the file named
        ("user", bike, "u-2", "2024-04-29T08:45:00",
         "Here is the cassette after cleaning.\nIt still clicks in sixth gear.\n"
         "[attached file: cassette.jpg]"),
        # Two conversations with the same title stay two sessions.
        ("user", "New chat [77aa88bb]", "q2", "2024-04-30T09:40:10",
         "How long should sourdough proof in a cold fridge?"),
        ("assistant", "New chat [77aa88bb]", "r2a", "2024-04-30T09:40:20",
         "Twelve to sixteen hours is typical."),
        # No current_node: the branch ends at the newest message.
        ("user", "New chat [99cc00dd]", "q3", "2024-05-01T10:40:10",
         "Remind me to renew the passport in June."),
    ]  # fmt: skip
    first = items[1]
    assert isinstance(first, Episode)
    assert first.timestamp_raw == "1714380040.0"
    assert first.props == {
        "conversation_id": "5f0c1e2a-9b7d-4c1e-8f00-0a1b2c3d4e5f",
        "title": "Bike chain keeps slipping",
        "model": "o3",
    }
    assert [r.line for r in items if isinstance(r, Episode)] == [2, 2, 2, 123, 123, 148]


def conversation(*messages: dict[str, Any], current: str | None = None) -> dict[str, Any]:
    """A one-branch ChatGPT conversation of the given messages (ids n0, n1 ...)."""
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None}}
    parent = "root"
    for number, message in enumerate(messages):
        node = f"n{number}"
        mapping[node] = {"id": node, "message": {"id": node, **message}, "parent": parent}
        parent = node
    return {"title": "t", "id": "abcdef0123", "mapping": mapping, "current_node": current or parent}


def said(role: str, *parts: Any, **extra: Any) -> dict[str, Any]:
    content = {"content_type": "text", "parts": list(parts)}
    return {"author": {"role": role}, "content": content, "create_time": 1700000000, **extra}


def test_chatgpt_bad_shapes_are_reported() -> None:
    broken = conversation(said("user", "fine"), said("assistant", "x"))
    broken["mapping"]["n1"]["message"]["content"]["parts"] = "not a list"
    items = records(chatgpt, [broken, 7, {"title": "empty", "mapping": []}])
    assert isinstance(items[0], Episode) and items[0].text == "fine"
    assert [r.reason for r in items[1:] if isinstance(r, BadRecord)] == [
        "conversation 't': message n1: 'parts' must be a list",
        "conversation 2 is a number, not an object",
        "conversation 'empty': 'mapping' must be an object, not an array",
    ]
    assert records(chatgpt, '{"mapping": 1}') == [
        BadRecord(1, "conversation '(untitled)': 'mapping' must be an object, not a number")
    ]
    not_a_list = "expected a list of ChatGPT conversations, not a number"
    assert records(chatgpt, "3") == [BadRecord(1, not_a_list)]
    assert records(chatgpt, "[1,") == [BadRecord(1, "invalid JSON: Expecting value at column 4")]


def test_chatgpt_message_rules() -> None:
    conv = conversation(
        said("user", "   "),  # blank: not a turn
        said("system", "be brief"),
        said("assistant", "to the tool", recipient="python"),
        said("assistant", "hidden", metadata={"is_visually_hidden_from_conversation": True}),
        said("user", "x" * (1 << 20 + 1)),
        said("user", "a", "b", create_time=None),
    )
    items = records(chatgpt, [conv])
    assert isinstance(items[0], BadRecord) and "over the 1 MiB limit" in items[0].reason
    last = items[1]
    assert isinstance(last, Episode)
    assert (last.text, last.timestamp, last.timestamp_raw) == ("a\nb", None, None)
    # A single conversation object (not in a list) reads too.
    assert [r.text for r in records(chatgpt, conversation(said("user", "solo")))] == ["solo"]


def test_chatgpt_current_node_outside_the_tree_falls_back_to_the_newest_message() -> None:
    conv = conversation(said("user", "one"), said("assistant", "two"), current="gone")
    assert [r.text for r in records(chatgpt, [conv])] == ["one", "two"]


# --- Claude -----------------------------------------------------------------------------


def test_claude_text_blocks_files_and_the_current_branch() -> None:
    items = records(claude, CLAUDE.read_text())
    garden = "Garden watering schedule [3b1f7c52]"
    assert summary(items) == [
        ("user", garden, "m-1", "2024-06-02T08:15:03",
         "The raised beds dry out by noon. How often should I water?"),
        # Thinking, tool use and tool results are left out; the text blocks are joined.
        ("assistant", garden, "m-2", "2024-06-02T08:15:20",
         "Water deeply every morning in hot spells, and mulch the beds.\n\n"
         "Five to eight centimetres of mulch is enough."),
        # A message of files only: the files named, their contents not stored.
        ("user", garden, "m-3", "2024-06-02T08:19:00",
         "[attached file: soil-test.txt]\n[attached file: bed-photo.png]"),
        # An untitled conversation; only the branch that ends at the current leaf.
        ("user", "untitled [c9d8e7f6]", "b-1", "2024-06-05T19:00:10",
         "Suggest a name for a grey cat."),
        ("assistant", "untitled [c9d8e7f6]", "b-2b", "2024-06-05T19:01:15",
         "How about Pebble?"),
        ("user", "untitled [c9d8e7f6]", "b-3b", "2024-06-05T19:02:00", "Pebble it is."),
    ]  # fmt: skip
    assert items[0].props == {  # type: ignore[union-attr]
        "conversation_id": "3b1f7c52-2d44-4e0a-9a61-5e2b8c0d1f11",
        "title": "Garden watering schedule",
    }
    assert items[0].timestamp_raw == "2024-06-02T08:15:03.500000Z"  # type: ignore[union-attr]


def test_claude_plain_text_messages_and_wrapped_lists() -> None:
    conv = {
        "uuid": "u1",
        "name": "n",
        "chat_messages": [
            {"uuid": "a", "sender": "human", "text": "plain text only"},
            {"uuid": "b", "sender": "assistant", "text": "", "content": []},
            "oops",
        ],
    }
    wrapped = {"conversations": [conv, {"name": "x", "chat_messages": {}}]}
    items = records(claude, wrapped)
    assert isinstance(items[0], Episode) and items[0].text == "plain text only"
    assert [r.reason for r in items[1:] if isinstance(r, BadRecord)] == [
        "conversation 'n': message 3 is a string, not an object",
        "conversation 'x': 'chat_messages' must be a list, not an object",
    ]
    assert len(items) == 3


# --- detection and ingest ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"title": "t", "mapping": {}}]', "chatgpt"),
        ('{"title": "t", "mapping": {}, "current_node": null}', "chatgpt"),
        ('[{"uuid": "u", "chat_messages": []}]', "claude"),
        ('{"conversations": [{"chat_messages": []}]}', "claude"),
        ('[{"role": "user", "content": "hi"}]', "chat"),
    ],
)
def test_exports_are_detected_by_content(text: str, expected: str) -> None:
    assert detect_format("conversations.json", text) == expected
    assert detect_format("-", text) == expected


def test_format_auto_detects_and_names_the_formats(tmp_path: Path) -> None:
    assert read_source(str(CLAUDE), "auto").format == "claude"
    assert {"chatgpt", "claude"} <= set(FORMATS)


@pytest.fixture
def cli(tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    config = tmp_path / "memcli.yaml"
    config.write_text(
        f"db: {tmp_path / 'memory.db'}\nembedding:\n  provider: ollama\n  model: fake-embed\n"
        f"  url: {fake_server.ollama_url}\n"
    )
    return Memcli(config=config)


def test_ingest_a_later_export_adds_only_what_is_new(cli: Memcli, tmp_path: Path) -> None:
    first = cli.json("ingest", CHATGPT)[0]
    assert (first["new"], first["sessions"]) == (6, 3)
    later = json.loads(CHATGPT.read_text())
    grown = copy.deepcopy(later[1])
    grown["mapping"]["r2a"]["children"] = ["q2b"]
    grown["mapping"]["q2b"] = {
        "id": "q2b",
        "parent": "r2a",
        "message": {"id": "q2b", **said("user", "And at room temperature?")},
    }
    grown["current_node"] = "q2b"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([later[0], grown, later[2]]))
    report = cli.json("ingest", "--format", "auto", path)[0]
    assert (report["new"], report["skipped"]) == (1, 6)
    stats = cli.json("inspect")[0]
    assert stats["sessions"] == 3 and stats["nodes"] == {"episode": 7}


def test_ingest_claude_export(cli: Memcli) -> None:
    report = cli.json("ingest", "--format", "claude", CLAUDE)[0]
    assert (report["new"], report["sessions"]) == (6, 2)


def test_a_bad_conversation_rejects_the_export_and_writes_nothing(
    cli: Memcli, tmp_path: Path
) -> None:
    data = json.loads(CHATGPT.read_text())
    data[2]["mapping"] = "broken"
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data, indent=1))
    result = cli("ingest", path)
    assert result.exit_code == 4, result.stderr
    assert "conversations.json:" in result.stderr and "'mapping' must be an object" in result.stderr
    assert "fix:" in result.stderr
    assert not (tmp_path / "memory.db").exists()


# A ChatGPT export and a Claude export of the same exchange are stored alike: the same
# speaker names (user, assistant) and the same UTC times.

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
