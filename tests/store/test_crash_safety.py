"""Crash safety: SIGKILL an ingest or a prune mid-write; the file stays whole, all or nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from memcli.store import open_store
from tests.cli_runner import REPO, clean_env, run_process
from tests.fakeserver import FakeModelServer
from tests.reliability import integrity, write_config

LINES = 20_000


def conversation(path: Path, lines: int, sessions: int = 40) -> Path:
    """A generated JSONL conversation, `lines` turns spread over `sessions` sessions."""
    per = lines // sessions
    with path.open("w", encoding="utf-8") as fh:
        for i in range(lines):
            turn = {
                "content": f"turn {i} mentions topic {i % 37} and a plum number {i * 7919}",
                "speaker": "Ann" if i % 2 else "Ben",
                "session": f"s{i // per:03d}",
                "timestamp": f"2024-01-{1 + (i // per) % 28:02d}T10:{i % 60:02d}:00",
            }
            fh.write(json.dumps(turn) + "\n")
    return path


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "memcli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=REPO,
    )


def _kill_when_writing(proc: subprocess.Popen[bytes], db: Path, wal_bytes: int) -> bool:
    """SIGKILL the process once its WAL holds `wal_bytes` (it is then inside its write
    transaction: the db was checkpointed before it started). False if it finished first."""
    wal = Path(str(db) + "-wal")
    while proc.poll() is None:
        if wal.exists() and wal.stat().st_size >= wal_bytes:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.001)
    return False


def _assert_whole(db: Path, all_or_nothing: tuple[int, ...]) -> int:
    report = integrity(db)
    assert report["check"] == ["ok"]
    assert report["dangling_edges"] == 0
    assert report["dangling_links"] == 0
    assert report["orphan_fts_rows"] == 0
    assert report["episodes"] in all_or_nothing, report
    return int(report["episodes"])


def _vectors(db: Path) -> int:
    with open_store(db) as store:
        return len(store.get_vectors([n.id for n in store.iter_nodes("default")]))


def test_killing_ingest_mid_file_leaves_none_or_all_of_it(tmp_path: Path) -> None:
    source = conversation(tmp_path / "big.jsonl", LINES)
    db = tmp_path / "m.db"
    env = clean_env(MEMCLI_CONFIG=str(write_config(tmp_path)))
    open_store(db).close()  # schema, then no WAL
    outcomes = []
    # The first kills land early and late in the write; the timed ones wherever they fall.
    for wal_bytes in (1, 512 * 1024, 4 * 1024 * 1024):
        proc = _start(["--db", str(db), "ingest", str(source)], env)
        killed = _kill_when_writing(proc, db, wal_bytes)
        outcomes.append((killed, _assert_whole(db, (0, LINES))))
    for delay in (0.3, 0.9, 1.5):
        proc = _start(["--db", str(db), "ingest", str(source)], env)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcomes.append((True, _assert_whole(db, (0, LINES))))
        if outcomes[-1][1]:
            break  # a kill after the commit: the file is in, nothing more to interrupt
    # At least one kill hit the open write transaction and was rolled back.
    assert (True, 0) in outcomes, outcomes
    done = run_process("--db", str(db), "--json", "ingest", str(source), env=env)
    assert done.returncode == 0, done.stderr
    assert _assert_whole(db, (LINES,)) == LINES
    assert json.loads(done.stdout)["new"] + json.loads(done.stdout)["skipped"] == LINES
    again = run_process("--db", str(db), "--json", "ingest", str(source), env=env)
    assert json.loads(again.stdout)["new"] == 0
    assert integrity(db)["sources"] == 1


def test_killing_an_embedding_ingest_keeps_vectors_consistent(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    lines = 4_000
    source = conversation(tmp_path / "mid.jsonl", lines, sessions=8)
    db = tmp_path / "m.db"
    config = write_config(
        tmp_path, embedding={"provider": "ollama", "model": "fake", "url": fake_server.url}
    )
    env = clean_env(MEMCLI_CONFIG=str(config))
    open_store(db).close()
    proc = _start(["--db", str(db), "ingest", str(source)], env)
    assert _kill_when_writing(proc, db, 1)
    assert _vectors(db) == _assert_whole(db, (0, lines))  # a vector for every turn, no more
    done = run_process("--db", str(db), "ingest", str(source), env=env)
    assert done.returncode == 0, done.stderr
    assert _assert_whole(db, (lines,)) == lines == _vectors(db)
    ask = run_process(
        "--db", str(db), "--json", "ask", "--context-only", "--strategy", "semantic",
        "plum number 7919", env=env,
    )  # fmt: skip
    assert ask.returncode == 0, ask.stderr
    assert len(json.loads(ask.stdout)["hits"]) == 10


def test_killing_prune_mid_transaction_removes_none_or_all(tmp_path: Path) -> None:
    source = conversation(tmp_path / "big.jsonl", LINES)
    db = tmp_path / "m.db"
    env = clean_env(MEMCLI_CONFIG=str(write_config(tmp_path)))
    assert run_process("--db", str(db), "ingest", str(source), env=env).returncode == 0
    # Half of the sessions: s000..s019.
    args = ["--db", str(db), "prune", "--session", "s00*", "--session", "s01*", "--yes"]
    proc = _start(args, env)
    killed = _kill_when_writing(proc, db, 64 * 1024)
    left = _assert_whole(db, (LINES, LINES // 2))
    assert killed and left == LINES  # the prune was interrupted and nothing of it stayed
    done = run_process(*args, env=env)
    assert done.returncode == 0, done.stderr
    assert _assert_whole(db, (LINES // 2,)) == LINES // 2
    assert os.stat(db).st_size > 0
