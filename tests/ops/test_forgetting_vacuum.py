"""`prune --vacuum` scrubs a forgotten turn's words from the database file and its WAL, and
keeps the tombstones: the turn is still not stored again."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcli.store import open_store
from tests.cli_runner import REPO, Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer

EXAMPLE = REPO / "examples" / "chat.jsonl"
# Words only the last session's turns hold (its four turns are forgotten below).
SECRETS = (b"fado", b"dry run of the talk", b"backup slide")


def found(db: Path) -> set[bytes]:
    """Which of the secrets the store's files (database, WAL, shared memory) hold."""
    blob = b"".join(
        Path(f"{db}{suffix}").read_bytes()
        for suffix in ("", "-wal", "-shm")
        if Path(f"{db}{suffix}").exists()
    )
    return {s for s in SECRETS if s in blob or s.upper() in blob or s.title() in blob}


@pytest.mark.parametrize("consolidated", [False, True], ids=["ingested", "consolidated"])
def test_vacuum_scrubs_the_text_and_keeps_it_forgotten(
    tmp_path: Path, fake_server: FakeModelServer, consolidated: bool
) -> None:
    db = tmp_path / "m.db"
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=db)
    cli.ok("ingest", EXAMPLE)
    if consolidated:
        cli.ok("consolidate", "--no-llm", "--flush")
    # Another process keeps the store open (a server, a cron job's reader), so the WAL
    # stays beside the file instead of being removed as the last connection closes.
    with open_store(db) as other:
        assert found(db) == set(SECRETS)
        cli.ok("prune", "--session", "2024-03-23", "--yes")
        wal = Path(f"{db}-wal")
        assert wal.stat().st_size > 0
        assert found(db), "deleted rows linger in free pages and the WAL until a vacuum"
        assert cli.json("prune", "--vacuum", "--yes")[0]["vacuumed"] is True
        assert wal.exists() and wal.stat().st_size == 0
        assert found(db) == set()
        assert other.count_forgotten("default") == 4
    [again] = cli.json("ingest", EXAMPLE)
    assert (again["new"], again["forgotten"]) == (0, 4)
    assert found(db) == set()
