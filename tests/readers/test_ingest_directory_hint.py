"""`memcli ingest DIR` is refused, and the fix names what the directory holds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from memcli.errors import InvalidInput
from memcli.readers import read_source
from tests.cli_runner import Memcli
from tests.paths import DATA
from tests.reliability import write_config

DATA = DATA / "readers"


def fix_for(directory: Path) -> str:
    with pytest.raises(InvalidInput) as info:
        read_source(str(directory))
    assert info.value.problems == [f"{directory}: is a directory, not a file"]
    return info.value.fix or ""


def test_an_unzipped_chat_export_points_at_its_conversations_json(tmp_path: Path) -> None:
    export = tmp_path / "chatgpt-export"
    export.mkdir()
    shutil.copy(DATA / "chatgpt-conversations.json", export / "conversations.json")
    (export / "chat.html").write_text("<html></html>")
    (export / "user.json").write_text("{}")
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    refused = cli("ingest", export)
    assert refused.exit_code == 4
    assert f"memcli ingest {export}/conversations.json" in refused.stderr
    assert "*.jsonl" not in refused.stderr
    [report] = cli.json("ingest", export / "conversations.json")  # the advice works
    assert report["new"] > 0


def test_files_are_named_or_matched_by_their_suffix(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl", "c.jsonl", "notes.txt", "photo.png"):
        (tmp_path / name).write_text("x")
    fix = fix_for(tmp_path)
    assert f"memcli ingest {tmp_path}/*.jsonl {tmp_path}/notes.txt" in fix
    assert "photo.png" not in fix


def test_an_awkward_name_is_quoted_for_the_shell(tmp_path: Path) -> None:
    folder = tmp_path / "my chats"
    folder.mkdir()
    (folder / "one day.json.gz").write_bytes(b"")
    assert f"memcli ingest '{folder}'/'one day.json.gz'" in fix_for(folder)


def test_a_directory_without_conversation_files_says_so(tmp_path: Path) -> None:
    (tmp_path / "photo.png").write_text("x")
    (tmp_path / "inner").mkdir()
    fix = fix_for(tmp_path)
    assert "holds no file memcli reads" in fix and ".jsonl" in fix
    assert "*." not in fix
