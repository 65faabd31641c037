"""A full disk is an error with its own exit code (9) and the fix, not a crash: the write is
rolled back whole, the store stays intact and usable, and the same ingest run again once
there is room stores what is missing. A store that cannot be created leaves no file.

Runs on a small tmpfs mounted for the test (root only; skipped with the reason elsewhere).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_runner import REPO, Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer

EXAMPLE = REPO / "examples" / "chat.jsonl"
FULL = 9


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB file system of its own, unmounted afterwards."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command here")
    mountpoint = tmp_path / "disk"
    mountpoint.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mountpoint)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)


def _chat(path: Path, name: str, turns: int) -> Path:
    rows = [{"session": f"{name}-{i // 40}", "role": "user",
             "content": f"{name} turn {i}: " + " ".join(f"w{i}x{j}" for j in range(40))}
            for i in range(turns)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _fill(disk: Path, leave: int = 0) -> Path:
    """A file taking all the free space of the disk but `leave` bytes."""
    filler = disk / "filler"
    with filler.open("wb") as out:
        try:
            while shutil.disk_usage(disk).free > leave:
                out.write(b"\0" * min(1 << 16, max(4096, shutil.disk_usage(disk).free - leave)))
                out.flush()
        except OSError:  # no space left
            pass
    return filler


def _integrity(db: Path) -> tuple[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        return check, conn.execute("SELECT count(*) FROM nodes WHERE kind = 'episode'").fetchone()[
            0
        ]
    finally:
        conn.close()


def test_ingest_on_a_full_disk_fails_cleanly_and_resumes(
    disk: Path, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    db = disk / "memory.db"
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=db)
    cli.ok("ingest", EXAMPLE)
    small, large = (
        _chat(tmp_path / "small.jsonl", "small", 3),
        _chat(tmp_path / "l.jsonl", "l", 400),
    )
    filler = _fill(disk, leave=1 << 20)  # room for the small file, not for the large one
    result = cli("ingest", small, large)
    assert result.exit_code == FULL, result.stderr
    assert result.stderr.startswith(f"memcli: error: the disk holding {db} is full")
    assert "fix: free space on that disk, or move the store" in result.stderr
    assert "internal error" not in result.stderr and result.stdout == ""
    assert _integrity(db) == ("ok", 16 + 3)  # the first file is kept, the second rolled back
    assert cli.json("inspect")[0]["nodes"] == {"episode": 19}
    filler.unlink()
    [report] = cli.json("ingest", small, large)  # the same command again: the rest
    assert (report["new"], report["skipped"]) == (400, 3)
    assert _integrity(db) == ("ok", 419)


def test_a_new_store_on_a_full_disk_leaves_no_file(
    disk: Path, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    _fill(disk)
    db = disk / "new.db"
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=db)
    result = cli("ingest", EXAMPLE)
    assert result.exit_code == FULL, result.stderr
    assert f"the disk holding {db} is full" in result.stderr
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]


def test_sqlite_vecs_own_error_for_a_write_the_full_disk_refused_is_a_full_disk(
    disk: Path, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    """sqlite-vec reports a shadow-table write that failed in its own words ("could not
    update rowids position", SQLite's SQLITE_FULL lost on the way). Here a trigger makes that
    write fail the way a full disk does, on a disk that is full: exit 9, not an internal
    error; with room left, the same failure is not taken for a full disk."""
    db = disk / "memory.db"
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=db)
    cli.ok("ingest", EXAMPLE)
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TRIGGER no_room BEFORE UPDATE ON vec_nodes_rowids "
        "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    )
    conn.commit()
    conn.close()
    small = _chat(tmp_path / "small.jsonl", "small", 3)
    with_room = cli("ingest", small)
    assert with_room.exit_code == 1 and "could not update rowids position" in with_room.stderr
    _fill(disk, leave=256 << 10)
    result = cli("ingest", small)
    assert result.exit_code == FULL, result.stderr
    assert result.stderr.startswith(f"memcli: error: the disk holding {db} is full")
    assert "internal error" not in result.stderr and result.stdout == ""
