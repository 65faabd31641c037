"""Moving a memory between the backends: `memcli export | memcli --db postgresql://… import`
and back keeps every record, vectors included, and the copies answer alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcli.store import open_store
from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.stores import StoreCache

pytestmark = pytest.mark.postgres

VOLATILE = ("exported_at", "schema")  # when, and which backend's migration count
QUESTIONS = "Where did Ana go on holiday?\nWhat does Ben play?\nWhen is the concert?\n"


def _records(path: Path, made_now: bool = False) -> list[dict[str, Any]]:
    """The dump's records, without what differs by when and where it was written (and
    with `made_now`, without the times of rows the last command made)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for key in VOLATILE:
        records[0].pop(key)
    for record in records[1:] if made_now else ():
        record.pop("forgotten_at", None)  # a tombstone: when prune ran
        if record.get("record") == "edge":
            record.pop("created_at")  # NEXT edges bridging a removed turn: made by prune
    return records


def _cli(folder: Path, server: FakeModelServer, db: str) -> Memcli:
    folder.mkdir(parents=True, exist_ok=True)
    return Memcli(config=config_file(folder, server, llm=False), env={"MEMCLI_DB": db})


def test_a_store_goes_to_postgres_and_back_with_everything(
    stores: StoreCache, pg_url: str, fake_server: FakeModelServer, tmp_path: Path
) -> None:
    source = stores.copy("chat-scripted", tmp_path / "source.db").path
    sqlite = _cli(tmp_path / "a", fake_server, str(source))
    sqlite.ok("export", "--vectors", "-o", tmp_path / "from-sqlite.jsonl")
    kinds = {r.get("kind") for r in _records(tmp_path / "from-sqlite.jsonl")}
    assert {"episode", "segment", "fact", "reflection", "concept", "entity"} <= kinds

    pg = _cli(tmp_path / "b", fake_server, pg_url)
    report = pg.json("import", tmp_path / "from-sqlite.jsonl")[0]
    assert report["ids"] == "kept" and report["vectors_from_file"] > 0
    assert report["embedded"] == 0
    pg.ok("export", "--vectors", "-o", tmp_path / "from-pg.jsonl")
    assert _records(tmp_path / "from-pg.jsonl") == _records(tmp_path / "from-sqlite.jsonl")

    back = _cli(tmp_path / "c", fake_server, str(tmp_path / "back.db"))
    back.ok("import", tmp_path / "from-pg.jsonl")
    back.ok("export", "--vectors", "-o", tmp_path / "back.jsonl")
    assert _records(tmp_path / "back.jsonl") == _records(tmp_path / "from-sqlite.jsonl")

    for strategy in ("semantic", "hybrid"):
        answers = [
            cli.ok("ask", "--context-only", "--strategy", strategy, "-", input=QUESTIONS).stdout
            for cli in (sqlite, pg)
        ]
        assert answers[0] == answers[1], strategy
    assert pg.json("inspect")[0]["nodes"] == sqlite.json("inspect")[0]["nodes"]
    with open_store(pg_url) as store:
        assert store.count_space_nodes("default") == sum(
            sqlite.json("inspect")[0]["nodes"].values()
        )


def test_prune_forgets_the_same_in_both_backends(
    stores: StoreCache, pg_url: str, fake_server: FakeModelServer, tmp_path: Path
) -> None:
    source = stores.copy("chat-scripted", tmp_path / "source.db").path
    sqlite = _cli(tmp_path / "a", fake_server, str(source))
    sqlite.ok("export", "--vectors", "-o", tmp_path / "dump.jsonl")
    pg = _cli(tmp_path / "b", fake_server, pg_url)
    pg.ok("import", tmp_path / "dump.jsonl")
    for cli in (sqlite, pg):
        reports = cli.json("prune", "--node", "ep2", "--node", "ep5", "--yes", "--vacuum")
        cli.ok("export", "--vectors", "-o", tmp_path / f"{id(cli)}.jsonl")
    after = [_records(tmp_path / f"{id(cli)}.jsonl", made_now=True) for cli in (sqlite, pg)]
    assert after[0] == after[1]
    assert any(r.get("record") == "forgotten" for r in after[1]), reports
    assert len(after[1]) < len(_records(tmp_path / "dump.jsonl"))
