"""A store the user can only read is still a store to read from: `ask`, `inspect`, `list`
and the dry runs work, and every command that writes fails with exit 7 and the fix.

Tests run as root here, and root writes through file modes, so "read-only" is made the way
the kernel enforces it for everyone: a read-only bind mount (of the store's directory, or of
the file alone) in a private mount namespace (`unshare`). The chmod case runs only when the
tests run as an ordinary user.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memcli.store.sqlite.migrations import MIGRATIONS
from tests.cli_runner import REPO, Memcli, clean_env
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer

_MOUNT_RO = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
_UNSHARE = ["unshare", "--user", "--map-root-user", "--mount"]


def _can_mount() -> bool:
    try:
        probe = subprocess.run(
            [*_UNSHARE, "sh", "-c", _MOUNT_RO, "sh", str(REPO), "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


needs_mount = pytest.mark.skipif(not _can_mount(), reason="no user namespaces for a ro mount")


def _run_ro(target: Path, cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`memcli --config cfg ARGS` with `target` (a directory or one file) mounted read-only."""
    command = [sys.executable, "-m", "memcli", "--config", str(cfg), *args]
    return subprocess.run(
        [*_UNSHARE, "sh", "-c", _MOUNT_RO, "sh", str(target), *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        cwd=REPO,
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _reads_work(target: Path, cfg: Path) -> None:
    asked = _run_ro(target, cfg, "--json", "ask", "--context-only", "glassblowing class")
    assert asked.returncode == 0, asked.stderr
    assert [json.loads(line) for line in asked.stdout.splitlines()]
    inspected = _run_ro(target, cfg, "--json", "inspect")
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["nodes"]["episode"] > 0
    prune = ["prune", "--older-than", "1min", "--dry-run"]
    for dry in (["consolidate", "--dry-run", "--no-llm"], prune):
        result = _run_ro(target, cfg, *dry)
        assert result.returncode == 0, (dry, result.stderr)


def _writes_fail(target: Path, cfg: Path, chat: Path) -> None:
    prune = ["prune", "--older-than", "1min", "--yes"]
    for write in (["ingest", str(chat)], ["consolidate", "--no-llm"], ["reindex"], prune):
        result = _run_ro(target, cfg, *write)
        assert result.returncode == 7, (write, result.stderr)
        assert result.stdout == ""
        first, fix = result.stderr.splitlines()[:2]
        assert first.startswith("memcli: error: ") and "read-only" in first, first
        assert fix.strip().startswith("fix: ") and "copy" in fix, fix


@needs_mount
def test_a_store_on_a_read_only_directory_answers_and_refuses_writes(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    cfg = config_file(chat_store, fake_server)
    db = chat_store / "memory.db"
    before = _digest(db)
    _reads_work(chat_store, cfg)
    _writes_fail(chat_store, cfg, REPO / "examples" / "chat.jsonl")
    assert _digest(db) == before
    assert sorted(p.name for p in chat_store.iterdir()) == ["memcli.yaml", "memory.db"]


@needs_mount
def test_a_read_only_file_in_a_writable_directory(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    cfg = config_file(chat_store, fake_server)
    db = chat_store / "memory.db"
    before = _digest(db)
    _reads_work(db, cfg)
    _writes_fail(db, cfg, REPO / "examples" / "chat.jsonl")
    assert _digest(db) == before


@needs_mount
def test_an_answer_from_the_model_needs_no_write(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    """`ask` with a model caches its reply where it can; on a read-only store it answers
    uncached."""
    fake_server.responder = lambda body: json.dumps({"answer": "Glassblowing.", "citations": []})
    cfg = config_file(chat_store, fake_server)
    before = _digest(chat_store / "memory.db")
    for _ in range(2):
        asked = _run_ro(chat_store, cfg, "--json", "ask", "what class did Ana take?")
        assert asked.returncode == 0, asked.stderr
        assert json.loads(asked.stdout)["answer"]
    assert len(fake_server.requests_to("/api/chat")) == 2  # nothing was cached
    assert _digest(chat_store / "memory.db") == before


@needs_mount
def test_a_read_only_store_that_needs_an_upgrade_says_so(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    cfg = config_file(chat_store, fake_server)
    db = chat_store / "memory.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) - 1}")  # as an older memcli left it
    conn.close()
    result = _run_ro(chat_store, cfg, "inspect")
    assert result.returncode == 7, result.stderr
    assert "needs a schema upgrade that writes it" in result.stderr
    assert "fix: run memcli on it once with write access" in result.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes")
def test_a_store_the_user_may_not_write(chat_store: Path, fake_server: FakeModelServer) -> None:
    cfg = config_file(chat_store, fake_server)
    (chat_store / "memory.db").chmod(0o444)
    chat_store.chmod(0o555)
    try:
        command = [sys.executable, "-m", "memcli", "--config", str(cfg), "inspect"]
        result = subprocess.run(command, capture_output=True, text=True, env=clean_env())
        assert result.returncode == 0, result.stderr
    finally:
        chat_store.chmod(0o755)


# Reading is enough for a dry run, and a store whose -shm an earlier reader left read-only
# says how to get writing again. Read-only is made as the kernel enforces it for root too: a
# read-only bind mount in a private mount namespace (`_run_ro` above).


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@needs_mount
def test_import_dry_run_on_a_read_only_store(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    cfg = config_file(chat_store, fake_server)
    dump = chat_store / "dump.jsonl"
    Memcli(config=cfg).ok("export", "-o", dump)
    before = digest(chat_store / "memory.db")
    for space in ([], ["--space", "elsewhere"]):
        planned = _run_ro(chat_store, cfg, "--json", *space, "import", "--dry-run", str(dump))
        assert planned.returncode == 0, planned.stderr
        assert json.loads(planned.stdout)["dry_run"] is True
    refused = _run_ro(chat_store, cfg, "import", str(dump))
    assert refused.returncode == 7 and "read-only" in refused.stderr
    assert digest(chat_store / "memory.db") == before


@needs_mount
def test_a_read_only_shm_left_by_a_reader_names_the_fix(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    cfg = config_file(chat_store, fake_server)
    shm = chat_store / "memory.db-shm"
    shm.touch()
    result = _run_ro(shm, cfg, "add", "a new note")
    assert result.returncode == 7
    assert "memory.db-shm beside it is read-only for you" in result.stderr
    assert f"delete memory.db-shm ({shm})" in result.stderr and "Never delete the -wal" in (
        result.stderr
    )
    assert "internal error" not in result.stderr
    assert _run_ro(REPO, cfg, "--json", "add", "a new note").returncode == 0  # writable again
