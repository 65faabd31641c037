"""Reading is enough for a dry run, and a store whose -shm an earlier reader left read-only
says how to get writing again. Read-only is made as the kernel enforces it for root too: a
read-only bind mount in a private mount namespace (see tests/test_readonly_store.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.cli_runner import REPO, Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.store.test_readonly_store import _run_ro, needs_mount


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
