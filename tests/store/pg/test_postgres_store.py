"""The Postgres store on a real server: BM25 as FTS5 ranks, statistics kept in step,
vectors exact and through HNSW, read-only roles, foreign tables, errors that name the fix."""

from __future__ import annotations

import pytest

from memcli.errors import DatabaseError, ReadOnlyStore
from memcli.models import Edge
from memcli.store import open_store
from memcli.store.pg import vectors as pg_vectors
from tests.cli_runner import clean_env, run_process
from tests.pg_server import PgServer, with_search_path

pytestmark = pytest.mark.postgres

# Words the Porter (FTS5) and Snowball (Postgres) stemmers treat alike.
CORPUS = [
    ("Ana", "we walked the dog along the river and the dog swam"),
    ("Ben", "the river was cold in March"),
    ("Ana", "my cello teacher lives by the river"),
    ("Ben", "cello lessons on Tuesday, then a walk with the dog"),
    ("Ana", "nothing to say about that"),
    ("Ben", "Ana said the dog likes the river more than the cello"),
]
QUERIES = ["river dog", "cello lessons", "walk", "March river cold", "Ana", "Tuesday cello dog"]


def _fill(store, space: str = "default") -> list[int]:
    rows = [
        {"text": text, "speaker": who, "session": "s1", "seq": i, "key": f"k{i}"}
        for i, (who, text) in enumerate(CORPUS)
    ]
    with store.transaction():
        return store.insert_nodes(space, "episode", rows)


def test_bm25_ranks_and_scores_as_fts5_does(pg_url: str, tmp_path) -> None:
    sqlite, pg = open_store(tmp_path / "m.db"), open_store(pg_url)
    try:
        assert _fill(sqlite) == _fill(pg)
        for query in QUERIES:
            ranked = {name: s.text_search("default", query, 10) for name, s in (
                ("sqlite", sqlite), ("pg", pg))}  # fmt: skip
            assert [i for i, _ in ranked["pg"]] == [i for i, _ in ranked["sqlite"]], query
            for (_, a), (_, b) in zip(ranked["pg"], ranked["sqlite"], strict=True):
                assert a == pytest.approx(b, rel=1e-6), query
    finally:
        sqlite.close()
        pg.close()


def test_text_statistics_follow_every_write_and_delete(pg_url: str) -> None:
    with open_store(pg_url) as store:
        ids = _fill(store)
        with store.transaction():
            store.update_node(ids[4], text="the dog again")
            store.delete_nodes([ids[0]])
        stats = store.run("SELECT docs, tokens FROM text_stats").fetchone()
        recount = store.run("SELECT count(*), sum(tokens) FROM text_rows").fetchone()
        assert tuple(stats) == tuple(recount)
        kept = dict(store.run("SELECT term, docs FROM text_terms").fetchall())
        actual = dict(store.run(
            "SELECT t, count(*) FROM text_rows, unnest(tsvector_to_array(terms)) AS t GROUP BY t"
        ).fetchall())  # fmt: skip
        assert kept == actual and kept["dog"] == 3  # "swam" went with the deleted turn
        assert "swam" not in kept


def test_vector_search_is_exact_then_uses_hnsw_past_the_threshold(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(60, 8)).astype(np.float32)
    with open_store(pg_url) as store:
        with store.transaction():
            ids = store.insert_nodes("default", "fact", [{"text": f"f{i}"} for i in range(60)])
            store.ensure_vectors(8)
            store.put_vectors((i, "default", "fact", v) for i, v in zip(ids, vectors, strict=True))
        exact = store.vector_search("default", vectors[7], 5)
        assert exact[0] == (ids[7], pytest.approx(1.0, abs=1e-6))
        assert not store._indexed()
        monkeypatch.setattr(pg_vectors, "HNSW_ABOVE", 50)
        with store.transaction():
            store.put_vectors([(ids[0], "default", "fact", vectors[0])])
        assert store._indexed()
        approx = store.vector_search("default", vectors[7], 5)
        assert [i for i, _ in approx][:3] == [i for i, _ in exact][:3]
        got = store.get_vectors([ids[3]])[ids[3]]
        assert got.dtype == np.float32 and np.array_equal(got, vectors[3])  # bit for bit


def test_a_role_that_may_only_read_gets_a_read_only_store(pg_server: PgServer, pg_url: str) -> None:
    import psycopg

    with open_store(pg_url) as store:
        _fill(store)
        schema = store.schema
    with psycopg.connect(pg_server.base, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS memcli_reader")
        conn.execute("CREATE ROLE memcli_reader LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO memcli_reader")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO memcli_reader")
    reader = with_search_path(pg_server.base.replace("postgres:@", "memcli_reader:@"), schema)
    with open_store(reader) as store:
        assert store.read_only and "memcli_reader" in store.read_only
        assert [i for i, _ in store.text_search("default", "cello", 3)]
        with pytest.raises(ReadOnlyStore) as caught:
            store.transaction()
        assert "role that may write" in (caught.value.fix or "")  # not a file to copy


def test_another_programs_nodes_table_is_left_alone(pg_url: str) -> None:
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE nodes (id int, label text)")
    with pytest.raises(DatabaseError, match="another program") as caught:
        open_store(pg_url)
    assert "search_path" in (caught.value.fix or "")


def test_an_unreachable_server_is_a_database_error_without_the_password(tmp_path) -> None:
    url = f"postgresql://mem:hunter2@/memdb?host={tmp_path}&connect_timeout=2"
    result = run_process("--db", url, "inspect", env=clean_env())
    assert result.returncode == 7, result.stderr
    assert "cannot connect" in result.stderr and "hunter2" not in result.stderr
    assert "mem:***@" in result.stderr


def test_edges_and_provenance_work_as_in_sqlite(pg_url: str) -> None:
    with open_store(pg_url) as store:
        e1, e2 = _fill(store)[:2]
        with store.transaction():
            fact = store.insert_node("default", "fact", "a fact")
            seg = store.insert_node("default", "segment", "a topic")
            store.add_edges(
                "default",
                [
                    Edge(fact, e2, "DERIVED_FROM"),
                    Edge(fact, e1, "DERIVED_FROM"),
                    Edge(e1, seg, "PART_OF"),
                ],
            )
        assert store.sources_of([fact, seg]) == {fact: [f"ep{e1}", f"ep{e2}"], seg: [f"ep{e1}"]}
        assert store.segments_of([fact]) == {fact: [seg]}
        assert store.degrees([fact, e1, 999]) == {fact: 2, e1: 2, 999: 0}


def test_a_store_opened_for_reading_only_refuses_every_write(pg_url: str) -> None:
    import psycopg

    from memcli.errors import NotFound

    with pytest.raises(NotFound):
        open_store(pg_url, read_only=True)  # nothing there yet: nothing made either
    with open_store(pg_url) as store:
        _fill(store)
    with open_store(pg_url, read_only=True) as store:
        assert store.read_only == "it was opened for reading only"
        assert store.count_nodes("default") == {"episode": len(CORPUS)}
        with pytest.raises(ReadOnlyStore):
            store.transaction()
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # the server says no too
            store.run("DELETE FROM nodes")


def test_browsing_sessions_and_runs_reads_as_in_sqlite(pg_url: str, tmp_path) -> None:
    sqlite, pg = open_store(tmp_path / "m.db"), open_store(pg_url)
    try:
        for store in (sqlite, pg):
            with store.transaction():
                store.insert_nodes("default", "episode", [
                    {"text": "late", "session": "b", "seq": 0, "timestamp": "2024-05-02"},
                    {"text": "early", "session": "a", "seq": 0, "timestamp": "2024-05-01"},
                    {"text": "later", "session": "a", "seq": 1, "timestamp": "2024-05-03"},
                ])  # fmt: skip
            run = store.run_start("default", "segment")
            store.run_finish(run, "done", {"items": 3}, None, {"gate_kept": 2})
        assert pg.session_page("default", 10) == sqlite.session_page("default", 10)
        assert pg.session_page("default", 1, 1)[0][0]["session"] == "b"
        assert [n.text for n in pg.session_turns("default", "a")] == ["early", "later"]
        pg_runs, sqlite_runs = pg.run_page("default", 5), sqlite.run_page("default", 5)
        keep = ("stage", "status", "items", "extra")
        assert [{k: r[k] for k in keep} for r in pg_runs[0]] == [
            {k: r[k] for k in keep} for r in sqlite_runs[0]
        ] and pg_runs[1] == 1
    finally:
        sqlite.close()
        pg.close()


def test_a_live_lock_is_never_forced_and_a_dead_one_needs_no_forcing(pg_url: str) -> None:
    import subprocess
    import sys

    from tests.cli_runner import REPO
    from tests.store.pg.test_postgres_writers import HOLDER

    open_store(pg_url).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, pg_url], cwd=REPO, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with open_store(pg_url) as store, pytest.raises(DatabaseError, match="left in place"):
            store.force_unlock("consolidate")
    finally:
        holder.kill()
        holder.wait()
    with open_store(pg_url) as store:
        assert store.force_unlock("consolidate")["pid"] == holder.pid  # its row, cleared
        assert store.force_unlock("consolidate") is None
        with store.consolidation_lock() as taken:
            assert taken is None


def test_a_connection_the_server_ended_is_a_database_error_with_the_fix(pg_url: str) -> None:
    import psycopg

    with open_store(pg_url) as store:
        _fill(store)
        backend = store.run("SELECT pg_backend_pid()").fetchone()[0]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        with pytest.raises(DatabaseError, match="lost the connection") as caught:
            store.text_search("default", "cello", 3)
        assert "server is running" in (caught.value.fix or "")


def test_chinese_and_japanese_turns_are_found_by_their_words(pg_url: str, tmp_path) -> None:
    turns = [
        "我们明天去北京开会",
        "東京の会議は来週です",
        "the meeting is in Beijing",
        "会议改到下午",
    ]
    found = {}
    for name, target in (("sqlite", str(tmp_path / "m.db")), ("pg", pg_url)):
        with open_store(target) as store:
            with store.transaction():
                store.insert_nodes("default", "episode", [{"text": t} for t in turns])
            found[name] = [
                [i for i, _ in store.text_search("default", q, 5)] for q in ("北京", "会議", "会议")
            ]
    assert found["pg"] == found["sqlite"] and all(found["pg"])


def test_a_store_of_the_first_schema_gets_every_later_migration(pg_url: str) -> None:
    with open_store(pg_url) as store, store.transaction():  # back to what m001 made
        store.run("DROP TABLE unit_failures")
        store.run("DROP INDEX text_rows_speaker")
        store.run("DROP TABLE text_postings")
        store.run("CREATE INDEX text_rows_terms ON text_rows USING GIN (terms)")
        store.run("DROP FUNCTION memcli_postings_added, memcli_postings_removed,"
                  " memcli_postings_replaced CASCADE")  # fmt: skip
        store.run("UPDATE meta SET value = '1' WHERE key = 'schema.version'")
        later = (
            "m002_unit_failures",
            "m003_speaker_index",
            "m004_postings",
            "m005_organiser_stats",
            "m006_search_form",
        )
        for name in later:
            store.run("DELETE FROM meta WHERE key = %s", (f"migration.{name}",))
        # a row written before the postings came: the migration fills its postings in
        (old,) = store.insert_nodes("a", "episode", [{"text": "the lighthouse keeper"}])
        # and an organiser counted with the memories, as m001's triggers count it
        (seg,) = store.insert_nodes("a", "segment", [{"text": "keeper keeper"}])
        store.run("INSERT INTO text_stats (space, docs, tokens) VALUES ('a', 1, 2) ON CONFLICT"
                  " (space) DO UPDATE SET docs = text_stats.docs + 1")  # fmt: skip
    with open_store(pg_url) as store:
        assert store.schema_version() == 6
        with store.transaction():
            (node,) = store.insert_nodes("a", "episode", [{"text": "hello", "speaker": "Ana"}])
            assert store.count_failed("a", "facts", [node]) == {node: 1}
        assert store.run("SELECT to_regclass('text_rows_speaker')").fetchone()[0] is not None
        assert store.run("SELECT to_regclass('text_rows_terms')").fetchone()[0] is None
        assert store.speaker_named("a", "ana") == "Ana"
        assert [i for i, _ in store.text_search("a", "lighthouse", 5)] == [old]
        assert [i for i, _ in store.text_search("a", "hello", 5)] == [node]
        # m005 counted the organisers apart: the memories' statistics are theirs alone.
        stats = dict(store.run("SELECT space, docs FROM text_stats").fetchall())
        assert stats == {"a": 2, "a\x1f": 1}
        assert seg not in [i for i, _ in store.text_search("a", "keeper", 5, ["episode"])]


_POSTINGS = "SELECT space, term, node, kind, tokens, a, b, c FROM text_postings ORDER BY 1, 2, 3"
_FROM_ROWS = (
    "SELECT r.space, u.lexeme, r.node, r.kind, r.tokens,"
    " (SELECT count(*) FILTER (WHERE x = 'A') FROM unnest(u.weights) x)::int,"
    " (SELECT count(*) FILTER (WHERE x = 'B') FROM unnest(u.weights) x)::int,"
    " (SELECT count(*) FILTER (WHERE x = 'C') FROM unnest(u.weights) x)::int"
    " FROM text_rows r CROSS JOIN LATERAL unnest(r.terms) u ORDER BY 1, 2, 3"
)


def test_the_postings_follow_every_write_to_the_full_text_rows(pg_url: str) -> None:
    with open_store(pg_url) as store:
        with store.transaction():
            a, b, c = store.insert_nodes("s", "episode", [
                {"text": "a red kite over the hill", "speaker": "Ana", "session": "1", "seq": 0},
                {"text": "kite, kite and one more kite", "speaker": "Ben Kite", "session": "1",
                 "seq": 1},
                {"text": "the hill fort", "speaker": "Ana", "session": "1", "seq": 2},
            ])  # fmt: skip
            store.index_context([a, b, c])  # the turns before each: the context part
        steps = [
            lambda: store.update_node(a, text="a blue heron"),
            lambda: store.delete_nodes([c]),
            lambda: store.insert_nodes("t", "fact", [{"text": "kites fly"}]),
        ]
        seen = []
        for step in [lambda: None, *steps]:
            with store.transaction():
                step()
            postings = store.run(_POSTINGS).fetchall()
            assert postings and postings == store.run(_FROM_ROWS).fetchall()
            seen.append({(n, t): (x, y, z) for _, t, n, _, _, x, y, z in postings})
        # b's "kite": 3 in its text, 1 in its speaker, 1 in the turn before it until that
        # turn is rewritten; c's postings go with it
        assert seen[0][b, "kite"] == (3, 1, 1) and seen[-1][b, "kite"] == (3, 1, 0)
        assert (c, "hill") in seen[0] and (c, "hill") not in seen[-1]
        assert store.text_search("s", "kite", 5)[0][0] == b
