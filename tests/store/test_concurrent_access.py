"""Concurrency: hundreds of asks while other processes ingest, consolidate and prune.

No "database is locked" may reach the user: readers never wait in WAL mode, and writers
wait for each other within the busy timeout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.cli_runner import REPO, clean_env, run_process
from tests.reliability import write_config

ASKS = 300
SEPARATE_ASKS = 10
EXAMPLE = REPO / "examples" / "chat.jsonl"
TOPICS = ("Lisbon train tickets", "graph databases talk", "hotel near the river", "ferry")


def _questions() -> list[str]:
    return [f"What about the {TOPICS[i % len(TOPICS)]} in batch {i % 7}?" for i in range(ASKS)]


def _generated(path: Path, n: int, lines: int = 600) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(lines):
            turn = {
                "content": f"batch {n} line {i}: the harbour ferry left at {i % 24}h",
                "speaker": "Ann" if i % 2 else "Ben",
                "session": f"gen{n}-{i // 300}",
            }
            fh.write(json.dumps(turn) + "\n")
    return path


class Writer(threading.Thread):
    """Run memcli commands in rounds, at least two, until told to stop; `commands(n)` gives
    round n's."""

    def __init__(self, commands: Callable[[int], list[list[str]]], env: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.commands, self.env = commands, env
        self.results: list[subprocess.CompletedProcess[str]] = []
        self.stop = threading.Event()
        self.running = threading.Event()

    def run(self) -> None:
        n = 0
        while n < 2 or not self.stop.is_set():
            for args in self.commands(n):
                self.running.set()
                self.results.append(run_process(*args, env=self.env))
            n += 1


def test_asks_never_see_a_locked_database_while_others_write(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    env = clean_env(MEMCLI_CONFIG=str(write_config(tmp_path)))
    base = run_process("--db", str(db), "ingest", str(EXAMPLE), env=env)
    assert base.returncode == 0, base.stderr

    def ingest(n: int) -> list[list[str]]:
        return [["--db", str(db), "ingest", str(_generated(tmp_path / f"a{n}.jsonl", n))]]

    def ingest_consolidate_prune(n: int) -> list[list[str]]:
        # Prune takes the consolidation lock, so it runs in the consolidating thread.
        mine = _generated(tmp_path / f"b{n}.jsonl", 1000 + n)
        commands = [["ingest", str(mine)], ["consolidate", "--no-llm", "--flush"]]
        if n:
            commands.append(["prune", "--source", str(tmp_path / f"b{n - 1}.jsonl"), "--yes"])
        return [["--db", str(db), *c] for c in commands]

    writers = [Writer(ingest, env), Writer(ingest_consolidate_prune, env)]
    for writer in writers:
        writer.start()
    assert all(w.running.wait(30) for w in writers)
    started = time.monotonic()
    reader = subprocess.Popen(
        [sys.executable, "-m", "memcli", "--db", str(db), "ask", "--context-only", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    with ThreadPoolExecutor(max_workers=1) as pool:
        single = [
            pool.submit(run_process, "--db", str(db), "--json", "ask", "--context-only", q, env=env)
            for q in _questions()[:SEPARATE_ASKS]
        ]
        out, err = reader.communicate("\n".join(_questions()) + "\n", timeout=600)
        singles = [f.result() for f in single]
    reading = time.monotonic() - started
    for writer in writers:
        writer.stop.set()
    for writer in writers:
        writer.join(timeout=300)
    assert reader.returncode == 0, err
    assert "locked" not in err.lower() and "busy" not in err.lower()
    answers = out.splitlines()
    assert len(answers) == ASKS
    assert sum(bool(a.strip()) for a in answers) > ASKS // 2  # real contexts came back
    for result in singles:
        assert result.returncode == 0, result.stderr
        assert "locked" not in result.stderr.lower()
        json.loads(result.stdout)
    ran = [r for w in writers for r in w.results]
    for result in ran:
        assert result.returncode == 0, (result.args, result.stderr)
        assert "locked" not in result.stderr.lower()
    # The writers really ran while the questions were being asked: ingest, consolidate, prune.
    names = ("ingest", "consolidate", "prune")
    commands = [next(a for a in r.args if a in names) for r in ran]
    assert set(commands) == set(names), (commands, reading)
