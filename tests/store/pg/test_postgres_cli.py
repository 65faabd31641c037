"""The commands on a Postgres store say what they say on a SQLite file: add, list with its
filters (sessions by glob, dates, text), prune by session glob, inspect; and the Python API
opens a store by URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcli.memory import Memory
from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer
from tests.reliability import write_config

pytestmark = pytest.mark.postgres

TURNS = [
    ("work-1", "2024-03-01T09:00:00", "The standup moved to 9:30 on Mondays."),
    ("work-2", "2024-03-05T10:00:00+02:00", "Budget review: the ferry tickets are refunded."),
    ("home", "2024-04-02", "Ana booked the Casa do Largo for our Lisbon trip."),
    ("home", None, "Remember the spare key is under the blue flowerpot."),
]
LISTINGS = [
    ("list",),
    ("list", "--session", "work-*"),
    ("list", "--session", "home", "--grep", "LISBON"),
    ("list", "--since", "2024-03-02", "--until", "2024-04-01"),
    ("list", "--kind", "episode", "--limit", "2", "--offset", "1"),
]


def _filled(tmp_path: Path, db: str) -> Memcli:
    cli = Memcli(config=write_config(tmp_path), env={"MEMCLI_DB": db})
    for session, when, text in TURNS:
        cli.ok("add", text, "--session", session, *(["--time", when] if when else []))
    return cli


def _ids_and_texts(cli: Memcli, *args: str) -> list[tuple[str, str]]:
    return [(r["node_id"], r["text"]) for r in cli.json(*args)]


def test_list_and_prune_say_the_same_on_both_backends(tmp_path: Path, pg_url: str) -> None:
    sqlite, pg = _filled(tmp_path, str(tmp_path / "m.db")), _filled(tmp_path, pg_url)
    for args in LISTINGS:
        expected = _ids_and_texts(sqlite, *args)
        assert expected and _ids_and_texts(pg, *args) == expected, args
    for cli in (sqlite, pg):
        cli.ok("prune", "--session", "work-?", "--yes")
    assert _ids_and_texts(pg, "list") == _ids_and_texts(sqlite, "list")
    assert len(_ids_and_texts(pg, "list")) == 2
    stats = pg.json("inspect")[0]
    assert stats["forgotten"] == 2 and stats["db"].startswith("postgresql://")
    assert stats["nodes"] == sqlite.json("inspect")[0]["nodes"]


def test_the_python_api_opens_a_store_by_url(tmp_path: Path, pg_url: str) -> None:
    config = write_config(tmp_path)
    with Memory.open(pg_url, config=config) as mem:
        report = mem.add("The demo moved to Thursday 10:00", role="user")
        assert report.new
    with Memory.open(pg_url, config=config, create=False) as mem:
        found = mem.recall("When is the demo?", strategy="lexical")
        assert "Thursday" in found.context


def test_reindex_re_embeds_a_postgres_store(
    tmp_path: Path, pg_url: str, fake_server: FakeModelServer
) -> None:
    from memcli.store import open_store
    from tests.consolidate_helpers import CHAT, config_file

    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), env={"MEMCLI_DB": pg_url})
    cli.ok("ingest", CHAT)
    cli.ok("consolidate", "--no-llm", "--flush")
    before = len(fake_server.requests_to("/api/embed"))
    cli.ok("reindex")
    assert len(fake_server.requests_to("/api/embed")) > before
    with open_store(pg_url) as store:
        nodes = store.count_space_nodes("default")
        assert store.run("SELECT count(*) FROM node_vectors").fetchone()[0] == nodes
    assert cli.json("ask", "--context-only", "--strategy", "semantic", "dentist")[0]["hits"]
