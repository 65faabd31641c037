"""A file that is another program's SQLite database is never changed: every command
refuses it with the fix, before a table, the WAL switch or user_version touches it."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from tests.cli_runner import Memcli, Result
from tests.reliability import write_config


def foreign(path: Path, user_version: int = 0, journal: str = "delete") -> str:
    """An app's SQLite file (its own table, in the journal mode given); its sha256."""
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA journal_mode = {journal}")
        conn.execute("CREATE TABLE bookmarks (url TEXT, title TEXT)")
        conn.execute("INSERT INTO bookmarks VALUES ('https://example.org', 'Example')")
        conn.execute(f"PRAGMA user_version = {user_version}")
    conn.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "command",
    [
        ["inspect"],
        ["ask", "--context-only", "example"],
        ["list"],
        ["ingest", "CHAT"],
        ["add", "a note"],
        ["prune", "--session", "x", "--yes"],
    ],
)
@pytest.mark.parametrize(("user_version", "journal"), [(0, "delete"), (3, "delete"), (0, "wal")])
def test_another_programs_database_is_refused_and_left_alone(
    tmp_path: Path, command: list[str], user_version: int, journal: str
) -> None:
    db = tmp_path / "places.sqlite"
    before = foreign(db, user_version, journal)
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"text": "hello"}\n')
    cli = Memcli(config=write_config(tmp_path), db=db)
    result = cli(*[str(chat) if part == "CHAT" else part for part in command])
    assert result.exit_code == 7, result.stderr
    assert f"{db} is an SQLite database of another program (it holds bookmarks)" in (result.stderr)
    assert "fix: pass --db the path of a memcli store" in result.stderr
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("places")) == [
        "places.sqlite"
    ]


def test_an_empty_file_still_becomes_a_store(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    db.touch()
    cli = Memcli(config=write_config(tmp_path), db=db)
    cli.ok("add", "first note")
    assert cli.ok("inspect").exit_code == 0


READS = [["inspect"], ["list"], ["ask", "--context-only", "example"], ["export", "-o", "OUT"]]
WRITES = [["ingest", "CHAT"], ["add", "a note"]]


def _run(tmp_path: Path, db: Path, command: list[str]) -> Result:
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"text": "hello"}\n')
    places = {"CHAT": str(chat), "OUT": str(tmp_path / "out.jsonl")}
    cli = Memcli(config=write_config(tmp_path), db=db)
    return cli(*[places.get(part, part) for part in command])


def _side_files(db: Path) -> list[str]:
    return sorted(p.name for p in db.parent.iterdir() if p.name.startswith(f"{db.name}-"))


@pytest.mark.parametrize("command", READS + WRITES + [["prune", "--session", "x", "--yes"]])
def test_a_file_with_a_user_version_and_no_table_is_not_a_store(
    tmp_path: Path, command: list[str]
) -> None:
    db = tmp_path / "app.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 3")  # another program's mark, before its tables
    conn.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    result = _run(tmp_path, db, command)
    assert result.exit_code == 7, result.stderr
    assert f"{db} is an SQLite database of another program (it has user_version 3" in (
        result.stderr
    )
    assert "fix: pass --db the path of a memcli store" in result.stderr
    assert "Traceback" not in result.stderr and "no such table" not in result.stderr
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert _side_files(db) == []


@pytest.mark.parametrize("journal", [None, "delete", "wal"])
@pytest.mark.parametrize("command", [*READS, ["consolidate"], ["prune", "--session", "x", "--yes"]])
def test_a_command_that_only_uses_a_store_leaves_an_empty_file_empty(
    tmp_path: Path, command: list[str], journal: str | None
) -> None:
    db = tmp_path / "empty.db"
    db.touch()
    if journal is not None:  # an SQLite file without a single table
        with sqlite3.connect(db) as conn:
            conn.execute(f"PRAGMA journal_mode = {journal}")
        conn.close()
    before = db.read_bytes()
    result = _run(tmp_path, db, command)
    assert result.exit_code == 4, result.stderr
    assert f"no memory store at {db}" in result.stderr
    assert "fix: ingest something first" in result.stderr
    assert db.read_bytes() == before and _side_files(db) == []
