"""Migrations: what they create, that shipped ones never change, that old files still open."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memcli.store import open_store
from memcli.store.sqlite.db import connect
from memcli.store.sqlite.migrations import MIGRATIONS, as_step, migrate
from tests.paths import DATA

# sqlite_master of a store written by memcli before the store moved to sqlite-utils (schema
# version 3): one space's full-text table and a 3-dimensional vector table included.
SCHEMA_V3 = json.loads((DATA / "store" / "schema-v3.json").read_text())
# ... after m004 gave `runs` its `extra` column ...
SCHEMA_V4 = json.loads((DATA / "store" / "schema-v4.json").read_text())
# ... after m005 gave full-text tables the `context` column of turns ...
SCHEMA_V5 = json.loads((DATA / "store" / "schema-v5.json").read_text())
# ... after m006 added the counted words of turns ...
SCHEMA_V6 = json.loads((DATA / "store" / "schema-v6.json").read_text())
# ... after m007 added the tombstones of forgotten turns ...
SCHEMA_V7 = json.loads((DATA / "store" / "schema-v7.json").read_text())
# ... after m008 added the failed runs of consolidation units ...
SCHEMA_V8 = json.loads((DATA / "store" / "schema-v8.json").read_text())
# ... and of a store today (m009 gave the organisers a full-text table of their own).
SCHEMA_V9 = json.loads((DATA / "store" / "schema-v9.json").read_text())
# tables FTS5 and sqlite-vec make for themselves
SHADOW = re.compile(r"fts_\d+(_org)?_(data|idx|content|docsize|config)$|vec_nodes_")


def _schema(conn) -> list[list[str]]:
    rows = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid"
    )
    return [list(r) for r in rows if not SHADOW.match(r[1])]


def test_a_new_store_has_exactly_the_shipped_schema(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.db") as store, store.transaction():
        store.insert_node("a", "episode", "hello")
        store.ensure_vectors(3)
        assert _schema(store.conn) == SCHEMA_V9


def test_each_migration_is_recorded_once(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.db") as store:
        stamps = {
            row["key"]: row["value"]
            for row in store.table("meta").rows_where("key LIKE 'migration.%'")
        }
    assert sorted(stamps) == [f"migration.{name}" for name, _ in MIGRATIONS]
    first = f"migration.{MIGRATIONS[0][0]}"
    with open_store(tmp_path / "m.db") as store:
        store.set_meta(first, "then")
    with open_store(tmp_path / "m.db") as store:  # reopening migrates nothing again
        assert store.get_meta(first) == "then"


def _old_store(path: Path) -> None:
    """A file as the previous code wrote it: its DDL replayed, rows written by hand."""
    conn = connect(path)
    for _, name, sql in SCHEMA_V3:
        if name != "sqlite_sequence":
            conn.execute(sql)
    conn.execute("INSERT INTO fts_spaces (id, space) VALUES (1, 'a')")
    conn.execute(
        "INSERT INTO nodes (id, space, kind, text, speaker, session, seq, props, created_at)"
        " VALUES (7, 'a', 'episode', 'we went to the woodturning class', 'Ana', 's1', 0, '{}', '')"
    )
    conn.execute(
        "INSERT INTO fts_1 (rowid, text, speaker, kind)"
        " VALUES (7, 'we went to the woodturning class', 'Ana', 'episode')"
    )
    conn.execute(
        "INSERT INTO vec_nodes (rowid, space, kind, embedding) VALUES (7, 'a', 'episode', ?)",
        (b"\x00\x00\x80\x3f" + bytes(8),),
    )
    conn.execute("INSERT INTO meta (key, value) VALUES ('embedding.dim', '3')")
    conn.execute("PRAGMA user_version = 3")
    conn.close()


def test_a_store_written_by_the_previous_code_opens_and_works(tmp_path: Path) -> None:
    _old_store(tmp_path / "old.db")
    with open_store(tmp_path / "old.db") as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert store.get_node(7).text == "we went to the woodturning class"
        assert [i for i, _ in store.text_search("a", "woodturning", 5)] == [7]
        assert [i for i, _ in store.vector_search("a", [1, 0, 0], 5)] == [7]
        with store.transaction():
            store.ensure_vectors(3)
            new = store.insert_node("a", "episode", "the woodturning lathe", session="s1", seq=1)
            store.put_vectors([(new, "a", "episode", [0, 1, 0])])
        assert new == 8
        assert sorted(i for i, _ in store.text_search("a", "woodturning", 5)) == [7, 8]
        assert [i for i, _ in store.vector_search("a", [0, 1, 0], 1)] == [8]
        # m005 made the full-text table again: same schema, listed in another order.
        assert sorted(_schema(store.conn)) == sorted(SCHEMA_V9)


def _v4_store(path: Path) -> None:
    """A file as the code before m005 wrote it: three turns of one session, full-text rows
    without context."""
    conn = connect(path)
    for _, name, sql in SCHEMA_V4:
        if name not in ("sqlite_sequence", "vec_nodes"):
            conn.execute(sql)
    conn.execute("INSERT INTO fts_spaces (id, space) VALUES (1, 'a')")
    turns = ["We repainted the garden shed", "Which colour did you pick?", "Moss green!"]
    for seq, text in enumerate(turns):
        conn.execute(
            "INSERT INTO nodes (id, space, kind, text, session, seq, props, created_at)"
            " VALUES (?, 'a', 'episode', ?, 's1', ?, '{}', '')",
            (seq + 1, text, seq),
        )
        conn.execute(
            "INSERT INTO fts_1 (rowid, text, speaker, kind) VALUES (?, ?, '', 'episode')",
            (seq + 1, text),
        )
    conn.execute("PRAGMA user_version = 4")
    conn.close()


def test_m005_indexes_each_turn_with_the_turns_before_it(tmp_path: Path) -> None:
    _v4_store(tmp_path / "v4.db")
    with open_store(tmp_path / "v4.db") as store:
        context = dict(store.conn.execute("SELECT rowid, context FROM fts_1").fetchall())
        assert context == {
            1: "",
            2: "We repainted the garden shed",
            3: "We repainted the garden shed Which colour did you pick?",
        }
        # "Moss green!" is found by what its turn was about, below the turn that says it.
        assert [i for i, _ in store.text_search("a", "garden shed", 5)] == [1, 2, 3]
        assert [i for i, _ in store.text_search("a", "moss", 5)] == [3]


def test_a_new_migration_is_a_sqlite_utils_function_applied_once(tmp_path: Path) -> None:
    def m099_add_note(db) -> None:
        db["sources"].add_column("note", str)

    steps = [*MIGRATIONS, ("m099_add_note", as_step(m099_add_note))]
    with open_store(tmp_path / "m.db") as store:
        assert migrate(store.conn, steps) == len(MIGRATIONS) + 1
        assert migrate(store.conn, steps) == len(MIGRATIONS) + 1  # nothing left to do
        assert "note" in store.table("sources").columns_dict
        assert store.get_meta("migration.m099_add_note")
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 1


def test_a_failing_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    def m099_broken(db) -> None:
        db["sources"].add_column("note", str)
        raise RuntimeError("half done")

    steps = [*MIGRATIONS, ("m099_broken", as_step(m099_broken))]
    with open_store(tmp_path / "m.db") as store:
        with pytest.raises(RuntimeError):
            migrate(store.conn, steps)
        assert "note" not in store.table("sources").columns_dict
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_m006_counts_the_words_of_the_turns_a_v5_store_holds(tmp_path: Path) -> None:
    conn = connect(tmp_path / "v5.db")
    for _, name, sql in SCHEMA_V5:
        if name not in ("sqlite_sequence", "vec_nodes"):
            conn.execute(sql)
    conn.execute("INSERT INTO fts_spaces (id, space) VALUES (1, 'a')")
    rows = [
        (1, "episode", "We repainted the garden shed"),
        (2, "episode", "The shed looks new"),
        (3, "segment", "A talk about sheds and paint"),
    ]
    for node_id, kind, text in rows:
        conn.execute(
            "INSERT INTO nodes (id, space, kind, text, props, created_at)"
            " VALUES (?, 'a', ?, ?, '{}', '')",
            (node_id, kind, text),
        )
        conn.execute(
            "INSERT INTO fts_1 (rowid, text, speaker, kind, context) VALUES (?, ?, '', ?, '')",
            (node_id, text, kind),
        )
    conn.execute("PRAGMA user_version = 5")
    conn.close()
    with open_store(tmp_path / "v5.db") as store:
        counted = store.conn.execute("SELECT word, turns, vector FROM words ORDER BY word")
        assert counted.fetchall() == [
            ("garden", 1, None),
            ("looks", 1, None),
            ("new", 1, None),
            ("repainted", 1, None),
            ("shed", 2, None),
        ]  # a segment's words are not a turn's
        assert store.unembedded_words("a") == ["garden", "looks", "new", "repainted", "shed"]


def _replayed(path: Path, schema: list[list[str]], version: int) -> Path:
    """An empty store of an older schema version: its DDL replayed, space `a` known."""
    conn = connect(path)
    for _, name, sql in schema:
        if name != "sqlite_sequence":
            conn.execute(sql)
    conn.execute("INSERT INTO fts_spaces (id, space) VALUES (1, 'a')")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.close()
    return path


def test_m007_gives_a_v6_store_an_empty_tombstone_table(tmp_path: Path) -> None:
    with open_store(_replayed(tmp_path / "v6.db", SCHEMA_V6, 6)) as store:
        assert sorted(_schema(store.conn)) == sorted(SCHEMA_V9)
        assert store.count_forgotten("a") == 0


def test_m008_gives_a_v7_store_an_empty_table_of_failed_units(tmp_path: Path) -> None:
    with open_store(_replayed(tmp_path / "v7.db", SCHEMA_V7, 7)) as store:
        assert sorted(_schema(store.conn)) == sorted(SCHEMA_V9)
        with store.transaction():
            (node,) = store.insert_nodes("a", "episode", [{"text": "hello"}])
            assert store.count_failed("a", "facts", [node]) == {node: 1}


def test_m009_moves_the_organisers_rows_to_their_own_table(tmp_path: Path) -> None:
    path = _replayed(tmp_path / "v8.db", SCHEMA_V8, 8)
    conn = connect(path)
    rows = [(1, "episode", "We repainted the garden shed"), (2, "episode", "The shed is green"),
            (3, "segment", "We repainted the garden shed. The shed is green"),
            (4, "concept", "garden_shed"), (5, "entity", "Shed Co")]  # fmt: skip
    for node_id, kind, text in rows:
        conn.execute("INSERT INTO nodes (id, space, kind, text, props, created_at)"
                     " VALUES (?, 'a', ?, ?, '{}', '')", (node_id, kind, text))  # fmt: skip
        conn.execute("INSERT INTO fts_1 (rowid, text, speaker, kind, context)"
                     " VALUES (?, ?, '', ?, '')", (node_id, text, kind))  # fmt: skip
    conn.close()
    with open_store(path) as store:
        assert sorted(_schema(store.conn)) == sorted(SCHEMA_V9)
        kinds = dict(store.conn.execute("SELECT rowid, kind FROM fts_1").fetchall())
        assert kinds == {1: "episode", 2: "episode"}
        assert sorted(i for i, _ in store.text_search("a", "shed", 9)) == [1, 2, 3, 4, 5]
        assert [i for i, _ in store.text_search("a", "shed", 9, ["segment"])] == [3]
        assert sorted(i for i, _ in store.text_search("a", "shed", 9, ["episode"])) == [1, 2]
