"""The consolidation lock belongs to the store: held for a block, released after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memcli.store import CONSOLIDATION_LOCK, open_store
from tests.paths import REPO

ROOT = REPO

# Holds the lock until told to let go on stdin, then reports and exits.
HOLDER = """
import sys
from memcli.store import open_store
with open_store(sys.argv[1]) as store, store.consolidation_lock() as holder:
    print("held" if holder is None else "refused", flush=True)
    sys.stdin.readline()
print("released", flush=True)
"""


def _holder(db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_the_lock_is_held_for_the_block_and_released_after(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    open_store(db).close()
    other = _holder(db)
    try:
        assert other.stdout is not None and other.stdout.readline().strip() == "held"
        with open_store(db) as store, store.consolidation_lock() as holder:
            assert holder is not None
            assert holder["pid"] == other.pid and holder["since"]
        with open_store(db) as store:  # refusing did not release the other's lock
            assert store.try_lock(CONSOLIDATION_LOCK) is not None
        assert other.stdin is not None
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.stdout.readline().strip() == "released"
    finally:
        other.kill()
        other.wait()
    with open_store(db) as store, store.consolidation_lock() as holder:
        assert holder is None


def test_the_lock_is_released_when_the_block_fails(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.db") as store:
        with pytest.raises(RuntimeError), store.consolidation_lock() as holder:
            assert holder is None
            raise RuntimeError("stage failed")
        assert store.table("locks").count == 0


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    dead = subprocess.run(
        [
            sys.executable,
            "-c",
            HOLDER.replace("sys.stdin.readline()", "import os; os._exit(0)"),
            str(db),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert dead.stdout.strip() == "held"  # it died holding the lock
    with open_store(db) as store:
        assert store.table("locks").count == 1
        with store.consolidation_lock() as holder:
            assert holder is None
