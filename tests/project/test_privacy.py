"""Secrets and privacy: a private database file, and API keys that never leave the environment."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memcli.store import open_store
from tests.cli_runner import REPO, clean_env, run_process
from tests.fakemodel import consolidation_reply
from tests.fakeserver import FakeModelServer, refused_url
from tests.reliability import raw_bytes, write_config

PLANTED = "sk-memcli-planted-7c1e9d04b2a5"  # what a careless log line would show
EXAMPLE = REPO / "tests" / "data" / "reliability" / "good.jsonl"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_database_wal_and_shm_are_readable_by_the_owner_only(tmp_path: Path) -> None:
    db = tmp_path / "new" / "dir" / "memory.db"
    env = clean_env(MEMCLI_CONFIG=str(write_config(tmp_path)))
    # A permissive umask: the file modes must not depend on the user's umask.
    done = subprocess.run(
        [sys.executable, "-m", "memcli", "--db", str(db), "ingest", str(EXAMPLE)],
        capture_output=True, text=True, env=env, cwd=REPO, umask=0, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _mode(db) == 0o600
    # While a reader holds the store open, its -wal and -shm files exist: check them too.
    reader = subprocess.Popen(
        [sys.executable, "-m", "memcli", "--db", str(db), "ask", "--context-only", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=REPO, umask=0,
    )  # fmt: skip
    wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
    deadline = time.monotonic() + 60
    while not (wal.exists() and shm.exists()) and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert _mode(wal) == 0o600 and _mode(shm) == 0o600
    finally:
        reader.communicate(b"What did Ann plant?\n", timeout=60)
    assert reader.returncode == 0


def _config(tmp_path: Path, url: str, *, llm: bool = False) -> Path:
    section = {"provider": "openai", "model": "fake", "url": url, "api_key_env": "PLANTED_KEY"}
    extra = {"llm": {**section, "max_retries": 1}} if llm else {}
    return write_config(tmp_path, embedding={**section, "max_retries": 1, "timeout": 5}, **extra)


def _leaks(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [name for name in ("stdout", "stderr") if PLANTED in getattr(result, name)]


@pytest.mark.parametrize("fault", ["wrong key", "server error", "refused"])
def test_api_key_never_reaches_output_logs_or_the_database(
    tmp_path: Path, fake_server: FakeModelServer, fault: str
) -> None:
    url = fake_server.openai_url
    if fault == "wrong key":
        fake_server.api_key = "sk-the-one-the-server-wants"  # its 401 echoes the key it got
    elif fault == "server error":
        fake_server.fail_next(50, status=500, message=f"upstream rejected {PLANTED}")
    else:
        url = refused_url() + "/v1"
    db = tmp_path / "m.db"
    open_store(db).close()  # `ask` needs a store; a failed ingest removes only one it made
    env = clean_env(MEMCLI_CONFIG=str(_config(tmp_path, url, llm=True)), PLANTED_KEY=PLANTED)
    runs = [
        run_process("--debug", "-v", "--db", str(db), "ingest", str(EXAMPLE), env=env),
        run_process("--debug", "-v", "--db", str(db), "ask", "--context-only", "garlic", env=env),
    ]
    # The chat model's turn: a full-text store, so that only the answer needs the server.
    text_only = {**env, "MEMCLI_EMBEDDING_PROVIDER": "none"}
    stored = run_process("--db", str(db), "--space", "t", "ingest", str(EXAMPLE), env=text_only)
    assert stored.returncode == 0, stored.stderr
    for command in (["ask", "garlic?"], ["consolidate", "--flush"]):
        args = ("--debug", "-v", "--db", str(db), "--space", "t", *command)
        runs.append(run_process(*args, env=text_only))
    for result in runs:
        assert result.returncode == 5, result.stderr
        assert result.stdout == ""
        assert result.stderr.startswith("memcli: error: ")
        assert _leaks(result) == [], result.args
    shown = run_process("--debug", "--db", str(db), "config", env=env)
    assert shown.returncode == 0 and _leaks(shown) == []
    assert "PLANTED_KEY" in shown.stdout
    assert PLANTED.encode() not in raw_bytes(db)
    if fault != "refused":
        # The key really was sent: the server saw it, memcli just never repeated it.
        seen = {r.headers.get("authorization") for r in fake_server.requests}
        assert f"Bearer {PLANTED}" in seen


def test_api_key_is_not_stored_after_successful_work(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.api_key = PLANTED
    fake_server.responder = consolidation_reply
    db = tmp_path / "m.db"
    env = clean_env(
        MEMCLI_CONFIG=str(_config(tmp_path, fake_server.openai_url, llm=True)),
        PLANTED_KEY=PLANTED,
    )
    runs = [
        run_process("--debug", "-v", "--db", str(db), "ingest", str(EXAMPLE), env=env),
        run_process("--debug", "-v", "--db", str(db), "ask", "what was planted?", env=env),
        run_process("--debug", "-v", "--db", str(db), "consolidate", "--flush", env=env),
        run_process("--debug", "-v", "--db", str(db), "--json", "inspect", env=env),
    ]
    for result in runs:
        assert result.returncode == 0, result.stderr
        assert _leaks(result) == []
    assert "The memory does not say." in runs[1].stdout
    assert '"fact": 3' in runs[3].stdout  # the model really did the work
    assert PLANTED.encode() not in raw_bytes(db)
    assert os.environ.get("PLANTED_KEY") is None  # the test never leaked it into itself
