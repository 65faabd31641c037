"""Stored text, speakers and session names reach a terminal as text: control characters
and escape sequences (ESC[2J, OSC window titles, BEL, NUL, CR, C1 CSI, bidi overrides) are
shown escaped by list, ask and inspect; `--json` escapes them as JSON does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memcli.text import terminal_safe
from tests.cli_runner import Memcli
from tests.reliability import write_config

CLEAR = "\x1b[2J\x1b[H"
TITLE = "\x1b]0;owned\x07"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")
ROWS = [
    {"text": f"The lantern{CLEAR} is in the shed{TITLE}, behind\rthe\x00 bikes\x9b2J \u202eevil",
     "speaker": f"Ann{TITLE}", "session": "trip\x1b[31m"},
    {"text": "[red]markup[/red] stays as written: lantern", "speaker": "[bold]Ben",
     "session": "s2"},
]  # fmt: skip


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    runner = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    runner.ok("ingest", chat)
    return runner


def test_escapes_are_shown_not_obeyed(cli: Memcli) -> None:
    for command in (
        ["list"],
        ["ask", "--context-only", "where is the lantern?"],
        ["inspect", "node", "ep1"],
        ["inspect"],
        ["list", "--session", "nope"],
    ):
        result = cli.ok(*command)
        for stream in (result.stdout, result.stderr):
            assert not RAW.search(stream), (command, stream)
    listed = cli.ok("list").stdout
    assert "\\x1b[2J" in listed and "Ann\\x1b]0;owned\\x07" in listed
    assert "\\x00" in listed and "\\x9b" in listed and "\\u202e" in listed
    assert "behind\\rthe" in cli.ok("inspect", "node", "ep1").stdout  # list makes one line
    node = cli.ok("inspect", "node", "ep2").stdout
    assert "[red]markup[/red]" in node and "[bold]Ben" in node  # rich markup is not read


def test_json_keeps_the_text_exactly(cli: Memcli) -> None:
    records = cli.json("list")
    assert {r["text"] for r in records} == {ROWS[0]["text"], ROWS[1]["text"]}


def test_the_escape_function() -> None:
    assert terminal_safe("a\tb\nc") == "a\tb\nc"
    assert terminal_safe(f"x{TITLE}y\r") == "x\\x1b]0;owned\\x07y\\r"
