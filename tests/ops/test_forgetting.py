"""Forgetting lasts: `prune` leaves tombstones (content keys, no text), and ingest, add,
import and the MCP tools skip a forgotten turn and say how many, until told to let it back."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memcli.ops.ingest import episode_key
from memcli.readers import read_source
from memcli.store import open_store
from tests.cli_runner import REPO, Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.mcp.test_mcp import call, served, write_config

EXAMPLE = REPO / "examples" / "chat.jsonl"
LAST_SESSION = "2024-03-23"  # four turns: the talk's dry run and the fado show


@pytest.fixture
def cli(tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    """The CLI over a store holding the example chat, its last session forgotten."""
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    pruned = cli.ok("prune", "--session", LAST_SESSION, "--yes").stdout
    assert "4 turns stay forgotten: ingesting them again skips them" in pruned
    return cli


def episodes(cli: Memcli) -> int:
    return cli.json("inspect")[0]["nodes"].get("episode", 0)


def test_ingesting_the_file_again_skips_the_forgotten_turns(cli: Memcli) -> None:
    assert episodes(cli) == 12
    again = cli.ok("ingest", EXAMPLE)
    assert again.stdout.startswith(
        "0 new episodes, 12 already stored, 4 forgotten earlier, not stored again (1 file"
    )
    assert "--allow-forgotten stores them again" in again.stderr
    [report] = cli.json("ingest", EXAMPLE)
    assert (report["new"], report["skipped"], report["forgotten"]) == (0, 12, 4)
    assert episodes(cli) == 12
    assert cli.json("inspect")[0]["forgotten"] == 4
    assert "fado" not in cli.ok("list", "--limit", 50).stdout


def test_the_same_turns_match_from_a_moved_and_grown_file(cli: Memcli, tmp_path: Path) -> None:
    grown = tmp_path / "elsewhere" / "renamed.jsonl"
    grown.parent.mkdir()
    shutil.copy(EXAMPLE, grown)
    turn = {"session": LAST_SESSION, "timestamp": "2024-03-23T11:45:00", "role": "user",
            "content": "Also: the hotel wants our arrival time."}  # fmt: skip
    with grown.open("a") as out:
        out.write(json.dumps(turn) + "\n")
    [report] = cli.json("ingest", grown)
    assert (report["new"], report["skipped"], report["forgotten"]) == (1, 12, 4)
    # A forgotten turn written differently is another turn: it is stored.
    edited = tmp_path / "edited.jsonl"
    edited.write_text(EXAMPLE.read_text().replace("fado show", "fado concert"))
    assert cli.json("ingest", edited)[0]["new"] == 2  # the two turns that mention it


def test_a_tombstone_holds_the_turns_content_key_and_no_text(cli: Memcli) -> None:
    source = read_source(str(EXAMPLE), None)
    turns = [r for r in source.records if getattr(r, "session", None) == LAST_SESSION]
    keys = {episode_key(ep, 0) for ep in turns}
    with open_store(cli.db) as store:
        rows = store.forgotten_rows("default")
        assert {key for key, _ in rows} == keys
        assert store.table("forgotten").columns_dict == {
            "space": str, "key": str, "forgotten_at": str,
        }  # fmt: skip
        assert store.count_forgotten("other") == 0  # per space


def test_allow_forgotten_stores_them_again_and_lifts_the_tombstones(cli: Memcli) -> None:
    [report] = cli.json("ingest", "--allow-forgotten", EXAMPLE)
    assert (report["new"], report["restored"], report["forgotten"]) == (4, 4, 0)
    assert cli.json("inspect")[0]["forgotten"] == 0
    assert cli.json("ingest", EXAMPLE)[0]["skipped"] == 16
    cli.ok("prune", "--session", LAST_SESSION, "--yes")  # forgotten again: recorded again
    text = cli.ok("ingest", "--allow-forgotten", EXAMPLE).stdout
    assert text.startswith("4 new episodes in 1 session, 12 already stored, 4 forgotten "
                           "earlier, stored again (1 file")  # fmt: skip


def test_a_dry_run_records_nothing(tmp_path: Path, fake_server: FakeModelServer) -> None:
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    dry = cli.ok("prune", "--session", LAST_SESSION, "--dry-run").stdout
    assert "4 turns would stay forgotten" in dry
    assert cli.json("prune", "--session", LAST_SESSION, "--dry-run")[0]["forgotten"] == 4
    assert cli.json("ingest", EXAMPLE)[0]["forgotten"] == 0


def test_add_does_not_store_a_forgotten_memory_again(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=tmp_path / "m.db")
    note = ("add", "--session", "notes", "--time", "2024-05-03", "The spare key is in the shed")
    assert cli.json(*note)[0]["node_id"] == "ep1"
    cli.ok("prune", "--node", "ep1", "--yes")
    result = cli.ok(*note)
    assert result.stdout == "forgotten earlier, not stored again (session notes)\n"
    assert "--allow-forgotten" in result.stderr
    [record] = cli.json(*note)
    assert record["forgotten"] is True and record["node_id"] is None and not record["new"]
    assert cli.json(*note, "--allow-forgotten")[0] == {
        "node_id": "ep2", "new": True, "session": "notes", "timestamp": "2024-05-03T00:00:00",
        "source": "memcli-add", "forgotten": False,
    }  # fmt: skip
    assert cli.json(*note)[0]["node_id"] == "ep2"


def _export(cli: Memcli, path: Path) -> list[dict[str, Any]]:
    cli.ok("export", "-o", path)
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_and_import_carry_the_tombstones(
    cli: Memcli, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    records = _export(cli, tmp_path / "dump.jsonl")
    forgotten = [r for r in records if r["record"] == "forgotten"]
    assert len(forgotten) == 4 and set(forgotten[0]) == {"record", "key", "forgotten_at"}
    assert records[-1]["forgotten"] == 4
    other = Memcli(config=config_file(tmp_path / "b", fake_server, llm=False))
    assert "4 forgotten turns recorded" in other.ok("import", tmp_path / "dump.jsonl").stdout
    assert other.json("inspect")[0]["forgotten"] == 4
    assert other.json("ingest", EXAMPLE)[0]["forgotten"] == 4
    # A store that holds those turns keeps them: an import adds, it never forgets.
    third = Memcli(config=config_file(tmp_path / "c", fake_server, llm=False))
    third.ok("ingest", EXAMPLE)
    [report] = third.json("import", tmp_path / "dump.jsonl")
    assert report["tombstones"] == 0 and episodes(third) == 16


def test_an_older_backup_does_not_bring_forgotten_turns_back(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    cli.ok("consolidate", "--no-llm", "--flush")
    _export(cli, tmp_path / "before.jsonl")
    segments = cli.json("inspect")[0]["nodes"]["segment"]
    cli.ok("prune", "--session", "2024-03-09", "--yes")  # the middle session: 5 turns
    after = cli.json("inspect")[0]
    # Into a store that has only the turns, pruned the same way.
    fresh = Memcli(config=config_file(tmp_path / "b", fake_server, llm=False))
    fresh.ok("ingest", EXAMPLE)
    fresh.ok("prune", "--session", "2024-03-09", "--yes")
    [report] = fresh.json("import", tmp_path / "before.jsonl")
    assert report["forgotten"] == 5 and report["forgotten_derived"] > 0
    restored = fresh.json("inspect")[0]
    assert restored["nodes"] == after["nodes"] and restored["nodes"]["segment"] < segments
    assert restored["edges"]["NEXT"] == after["edges"]["NEXT"]
    assert "2024-03-09" not in fresh.ok("list", "--limit", 50).stdout
    # Into a new store (which has no tombstones) it all comes back: it was a backup.
    new = Memcli(config=config_file(tmp_path / "c", fake_server, llm=False))
    assert new.json("import", tmp_path / "before.jsonl")[0]["forgotten"] == 0
    # --allow-forgotten lets the turns back into the pruned store, lifting the tombstones.
    [back] = fresh.json("import", "--allow-forgotten", "--episodes-only", tmp_path / "before.jsonl")
    assert back["restored"] == 5 and fresh.json("inspect")[0]["forgotten"] == 0


def test_the_mcp_tools_skip_forgotten_turns(tmp_path: Path, fake_server: FakeModelServer) -> None:
    config = write_config(tmp_path, fake_server)

    async def scenario() -> None:
        async with served(config) as client:
            await call(client, "ingest", path=str(EXAMPLE))
            await call(client, "remember", text="Ana likes fado", time="2024-03-24")
            await call(client, "forget", sessions=[LAST_SESSION, "memcli-add:*"], confirm=True)
            again = await call(client, "ingest", path=str(EXAMPLE))
            assert (again["new"], again["forgotten"]) == (0, 4)
            note = await call(client, "remember", text="Ana likes fado", time="2024-03-24")
            assert note["forgotten"] is True and note["node_id"] is None
            assert (await call(client, "stats"))["forgotten"] == 5

    asyncio.run(scenario())


# `prune --vacuum` scrubs a forgotten turn's words from the database file and its WAL, and
# keeps the tombstones: the turn is still not stored again.

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
