"""`memcli export` / `memcli import` on a small consolidated store: normal use, idempotence,
dry runs, attributes added by later migrations, and bad inputs that must lose nothing."""

from __future__ import annotations

import base64
import gzip
import json
import math
import sqlite3
import struct
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.paths import EXAMPLE
from tests.stores import StoreCache


@pytest.fixture
def source(stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    """The consolidation chat after `consolidate --no-llm`, in tmp_path/src."""
    folder = tmp_path / "src"
    folder.mkdir()
    stores.copy("chat-no-llm", folder / "memory.db")
    return Memcli(config=config_file(folder, fake_server, llm=False))


@pytest.fixture
def target(tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    """An empty store in tmp_path/dst (created by the first command that writes)."""
    folder = tmp_path / "dst"
    folder.mkdir()
    return Memcli(config=config_file(folder, fake_server, llm=False), db=folder / "restored.db")


def failed(result: Any, code: int, *phrases: str) -> None:
    assert result.exit_code == code, result.stderr
    assert result.stderr.startswith("memcli: error: "), result.stderr
    assert "\n  fix: " in result.stderr, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr


def lines(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def nodes(cli: Memcli) -> dict[str, int]:
    return cli.json("inspect")[0]["nodes"]


def test_export_to_stdout_and_to_a_file(source: Memcli, tmp_path: Path) -> None:
    result = source.ok("export")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert records[0]["record"] == "memcli-export" and records[0]["format"] == 3
    assert records[-1]["record"] == "end"
    kinds = {r["kind"] for r in records if r["record"] == "node"}
    assert {"episode", "segment", "concept"} <= kinds
    assert records[-1]["nodes"] == sum(nodes(source).values())
    assert result.stderr.startswith("exported ")
    episode = next(r for r in records if r["record"] == "node" and r["kind"] == "episode")
    assert episode["id"].startswith("ep") and episode["sources"] and episode["timestamp"]
    assert "vector" not in episode
    edge = next(r for r in records if r["record"] == "edge")
    assert edge["src"][:2].isalpha() and edge["type"]

    dump = tmp_path / "out.jsonl.gz"
    summary = source.json("export", "-o", dump)[0]
    assert summary["file"] == str(dump) and summary["nodes"] == records[-1]["nodes"]
    assert lines(dump)[1:] == records[1:]
    assert dump.stat().st_mode & 0o077 == 0  # readable by its owner only
    with_vectors = tmp_path / "v.jsonl"
    source.ok("export", "--vectors", "-o", with_vectors)
    assert all("vector" in r for r in lines(with_vectors) if r.get("embedded"))


def test_import_restores_and_importing_again_adds_nothing(
    source: Memcli, target: Memcli, tmp_path: Path
) -> None:
    dump = tmp_path / "chat.jsonl"
    source.ok("export", "-o", dump)
    preview = target.json("import", "--dry-run", dump)[0]
    assert preview["dry_run"] and not target.db.exists()  # type: ignore[union-attr]
    first = target.json("import", dump)[0]
    assert first["new"] == preview["new"] == nodes(source) and first["ids"] == "kept"
    assert nodes(target) == nodes(source)
    again = target.ok("import", dump)
    assert again.stdout.startswith("added 0 memories") and "already stored" in again.stdout
    assert nodes(target) == nodes(source)
    node = source.json("list", "--kind", "segment", "--limit", 1)[0]["node_id"]
    assert source.json("inspect", "node", node) == target.json("inspect", "node", node)


def test_episodes_only_and_merging_into_a_store_that_holds_other_turns(
    source: Memcli, target: Memcli, tmp_path: Path
) -> None:
    dump = tmp_path / "chat.jsonl"
    source.ok("export", "-o", dump)
    target.ok("ingest", EXAMPLE)
    held = nodes(target)["episode"]
    report = target.json("import", "--episodes-only", dump)[0]
    assert set(report["new"]) == {"episode"} and report["left_out"] > 0
    assert report["ids"] == "renumbered"
    assert nodes(target)["episode"] == held + nodes(source)["episode"]
    assert target.json("consolidate", "--no-llm", "--dry-run")[0]["stages"]


def test_a_column_added_by_a_later_migration_round_trips(
    source: Memcli, target: Memcli, tmp_path: Path
) -> None:
    target.ok("ingest", EXAMPLE)
    source.ok("inspect")  # the source file exists and is migrated
    for db in (source.config.parent / "memory.db", target.db):  # type: ignore[union-attr]
        with sqlite3.connect(db) as conn:
            conn.execute("ALTER TABLE nodes ADD COLUMN valid_until TEXT")
            conn.execute("ALTER TABLE edges ADD COLUMN confidence REAL")
    with sqlite3.connect(source.config.parent / "memory.db") as conn:  # type: ignore[union-attr]
        conn.execute("UPDATE nodes SET valid_until = '2031-01-01' WHERE kind = 'segment'")
        conn.execute("UPDATE edges SET confidence = 0.5")
    dump = tmp_path / "new-columns.jsonl"
    source.ok("export", "-o", dump)
    records = lines(dump)
    assert any(r.get("valid_until") == "2031-01-01" for r in records)
    target.ok("--space", "copy", "import", dump)
    with sqlite3.connect(target.db) as conn:  # type: ignore[arg-type]
        (dated,) = conn.execute(
            "SELECT count(*) FROM nodes WHERE space = 'copy' AND valid_until = '2031-01-01'"
        ).fetchone()
        (weighed,) = conn.execute(
            "SELECT count(*) FROM edges WHERE space = 'copy' AND confidence = 0.5"
        ).fetchone()
    assert dated == nodes(source)["segment"] and weighed > 0


def test_a_field_the_store_cannot_hold_is_refused(
    source: Memcli, target: Memcli, tmp_path: Path
) -> None:
    dump = tmp_path / "chat.jsonl"
    source.ok("export", "-o", dump)
    records = lines(dump)
    records[3]["mood"] = "sunny"
    failed(target("import", write(dump, records)), 4, "mood", "upgrade memcli")
    assert not target.db.exists()  # type: ignore[union-attr]


def _cut_short(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return records[: len(records) // 2]


def _newer(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**records[0], "format": 99}, *records[1:]]


def _bad_record(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    broken = {**records[5], "text": 12}
    return [*records[:5], broken, *records[6:]]


def _dangling_edge(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    edge = next(r for r in records if r["record"] == "edge")
    return [*records[:-1], {**edge, "dst": "ep999999"}, records[-1]]


@pytest.mark.parametrize(
    ("change", "phrases"),
    [
        (_cut_short, ["ends without its end record", "cut short"]),
        (_newer, ["format 99 is newer", "upgrade memcli"]),
        (_bad_record, ["'text' cannot be 12"]),
        (_dangling_edge, ["a node the file does not hold"]),
    ],
    ids=["partial", "newer-format", "bad-record", "dangling-edge"],
)
def test_a_bad_dump_writes_nothing(
    source: Memcli, target: Memcli, tmp_path: Path, change: Any, phrases: list[str]
) -> None:
    dump = tmp_path / "chat.jsonl"
    source.ok("export", "-o", dump)
    target.ok("ingest", EXAMPLE)
    before = target.json("inspect")[0]
    failed(target("import", write(dump, change(lines(dump)))), 4, *phrases)
    assert target.json("inspect")[0] == before


def test_wrong_files_are_refused_with_a_pointer_to_ingest(target: Memcli, tmp_path: Path) -> None:
    failed(target("import", EXAMPLE), 4, "not a memcli export", "memcli ingest")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    failed(target("import", empty), 4, "the file is empty")
    failed(target("import", tmp_path / "missing.jsonl"), 4, "missing.jsonl")
    assert not target.db.exists()  # type: ignore[union-attr]


def test_export_to_a_place_it_cannot_write_leaves_nothing(source: Memcli, tmp_path: Path) -> None:
    failed(source("export", "-o", tmp_path), 4, "it is a directory")
    failed(source("export", "-o", tmp_path / "no" / "such" / "dir.jsonl"), 4, "cannot write")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_help_shows_examples(target: Memcli) -> None:
    for command in ("export", "import"):
        text = target.ok(command, "--help").stdout
        assert "Examples" in text and f" {command} " in text


# A dump whose vector holds NaN or infinity is refused before anything is written: one
# such vector would break every semantic and hybrid search of its space.


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_vector_is_refused(
    tmp_path: Path, fake_server: FakeModelServer, bad: float
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    source = Memcli(config=config_file(tmp_path / "a", fake_server, llm=False))
    source.ok("ingest", EXAMPLE)
    dump = tmp_path / "dump.jsonl"
    source.ok("export", "--vectors", "-o", dump)
    records = [json.loads(line) for line in dump.read_text().splitlines()]
    node = next(r for r in records if r.get("vector"))
    floats = list(struct.unpack(f"<{len(base64.b64decode(node['vector'])) // 4}f",
                                base64.b64decode(node["vector"])))  # fmt: skip
    floats[3] = bad
    node["vector"] = base64.b64encode(struct.pack(f"<{len(floats)}f", *floats)).decode()
    dump.write_text("".join(json.dumps(r) + "\n" for r in records))
    target = Memcli(config=config_file(tmp_path / "b", fake_server, llm=False))
    result = target("import", dump)
    assert result.exit_code == 4, result.stderr
    assert f"node {node['id']}: its vector holds NaN or infinity" in result.stderr
    assert not (tmp_path / "b" / "memory.db").exists()
