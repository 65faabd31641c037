"""The consolidation lock belongs to the store: held for a block, released after it, and taken
over from a holder that is gone."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memcli.store import CONSOLIDATION_LOCK, open_store
from tests.cli_runner import Memcli
from tests.paths import EXAMPLE, REPO
from tests.reliability import write_config

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


# A consolidation lock whose holder is gone is taken over; one held on another host or
# container, which cannot be checked, is reported with the command that releases it
# (`memcli consolidate --unlock`) instead of a silent exit 0 forever.


def lock(db: Path, pid: int, host: str, since: str = "2020-01-01T00:00:00+00:00") -> None:
    with open_store(db) as store, store.transaction():
        store.conn.execute(
            "INSERT INTO locks (name, pid, host, acquired_at) VALUES ('consolidate', ?, ?, ?)",
            (pid, host, since),
        )


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    runner = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    runner.ok("ingest", EXAMPLE)
    return runner


def segments(cli: Memcli) -> int:
    assert cli.db is not None
    with open_store(cli.db) as store:
        return int(store.count_nodes("default").get("segment", 0))


def test_a_reused_pid_does_not_keep_the_lock(cli: Memcli) -> None:
    """The pid is alive, but its process started after the lock was taken: not the holder."""
    assert cli.db is not None
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock(cli.db, stranger.pid, socket.gethostname())
        result = cli("-q", "consolidate", "--no-llm", "--flush")
        assert result.exit_code == 0, result.stderr
        assert segments(cli) > 0
        assert cli("prune", "--node", "ep1", "--yes").exit_code == 0
    finally:
        stranger.kill()
        stranger.wait()


def test_a_lock_from_another_host_is_reported_with_the_unlock_command(cli: Memcli) -> None:
    assert cli.db is not None
    lock(cli.db, 4242, "container-7f3a")
    quiet = cli("-q", "consolidate", "--no-llm", "--flush")
    assert quiet.exit_code == 7 and quiet.stdout == ""
    assert "held by pid 4242 on host container-7f3a" in quiet.stderr
    assert "memcli consolidate --unlock" in quiet.stderr
    pruned = cli("prune", "--session", "x", "--yes")
    assert pruned.exit_code == 7 and "memcli consolidate --unlock" in pruned.stderr
    assert segments(cli) == 0
    released = cli.json("consolidate", "--unlock")
    assert released == [
        {"released": True,
         "holder": {"pid": 4242, "host": "container-7f3a", "since": "2020-01-01T00:00:00+00:00"}}
    ]  # fmt: skip
    assert cli("-q", "consolidate", "--no-llm", "--flush").exit_code == 0
    assert segments(cli) > 0
    again = cli("consolidate", "--unlock")
    assert again.exit_code == 0 and "no consolidation lock was held" in again.stderr


def test_unlock_refuses_while_the_holder_runs_here(cli: Memcli) -> None:
    assert cli.db is not None
    code = (
        "import sys, time; from memcli.store import open_store;"
        f" s = open_store({str(cli.db)!r}); s.try_lock('consolidate');"
        " print('locked', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        refused = cli("consolidate", "--unlock")
        assert refused.exit_code == 7
        assert f"held by pid {holder.pid}, which is running on this host" in refused.stderr
        waiting = cli("--json", "consolidate", "--no-llm")
        assert waiting.exit_code == 0 and json.loads(waiting.stdout)["locked"] is True
    finally:
        holder.kill()
        holder.wait()
