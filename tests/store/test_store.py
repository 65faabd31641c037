"""The store: schema, search, provenance, deletion, safety (tests taking `store` run on
both backends, SQLite and Postgres)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from memcli.errors import DatabaseError, NodeNotFound
from memcli.models import Edge
from memcli.store import open_store
from memcli.store.sqlite.fts import fts_query
from memcli.store.sqlite.migrations import MIGRATIONS


@pytest.fixture
def store(store_target: str):
    """A new store of each backend (SQLite file, Postgres schema)."""
    s = open_store(store_target)
    yield s
    s.close()


def _episode(store, text: str, seq: int, speaker: str = "Ana", space: str = "default") -> int:
    return store.insert_node(
        space, "episode", text, speaker=speaker, session="s1", seq=seq, ref=f"D1:{seq}"
    )


def test_file_is_private_and_wal(tmp_path: Path) -> None:
    s = open_store(tmp_path / "sub" / "m.db")
    mode = stat.S_IMODE(os.stat(tmp_path / "sub" / "m.db").st_mode)
    assert mode == 0o600
    assert s.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert s.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    s.close()


def test_reopen_keeps_data_and_does_not_remigrate(tmp_path: Path) -> None:
    s = open_store(tmp_path / "m.db")
    with s.transaction():
        _episode(s, "hello there", 0)
    s.close()
    s = open_store(tmp_path / "m.db")
    assert s.count_nodes("default") == {"episode": 1}
    s.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    s = open_store(tmp_path / "m.db")
    s.conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    s.close()
    with pytest.raises(DatabaseError, match="newer"):
        open_store(tmp_path / "m.db")


def test_not_a_database_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(DatabaseError):
        open_store(bogus)


def test_transaction_rolls_back_on_error(store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        _episode(store, "never stored", 0)
        raise RuntimeError("boom")
    assert store.count_nodes("default") == {}
    assert store.text_search("default", "stored", 5) == []


def test_text_and_vector_search_are_scoped_to_a_space(store) -> None:
    with store.transaction():
        a = _episode(store, "we rescued a puppy named Rex", 0)
        b = _episode(store, "we rescued a kitten", 1, space="other")
        store.ensure_vectors(3)
        store.put_vectors(
            [(a, "default", "episode", [1, 0, 0]), (b, "other", "episode", [1, 0, 0])]
        )
    assert [i for i, _ in store.text_search("default", "rescued puppy", 5)] == [a]
    assert [i for i, _ in store.vector_search("other", [1, 0, 0], 5)] == [b]
    assert store.vector_search("default", [1, 0, 0], 5, kinds=["fact"]) == []


def test_full_text_ranking_in_a_space_ignores_other_spaces(store) -> None:
    def ranked() -> list[int]:
        return [i for i, _ in store.text_search("alice", "cat or dog?", 5)]

    with store.transaction():
        cat = _episode(store, "my cat sleeps", 0, space="alice")
        dog = _episode(store, "my dog and my dog's dog bowl", 1, space="alice")
    before = ranked()
    with store.transaction():  # "dog" becomes very common, but only in another space
        for i in range(200):
            _episode(store, f"dog walk number {i}", i, space="bob")
    assert ranked() == before and set(before) == {cat, dog}
    assert [i for i, _ in store.text_search("carol", "dog", 5)] == []  # no such space yet


def test_organisers_words_leave_the_memories_full_text_scores_alone(store) -> None:
    # A segment's summary repeats its turns' words: counted with them, it would change
    # every turn's BM25 after `consolidate`.
    def scores(kinds: list[str] | None = None) -> list[tuple[int, float, float, float, float]]:
        return store.text_search_columns("default", "garden shed paint", 9, kinds)

    with store.transaction():
        shed = _episode(store, "we painted the garden shed green", 0)
        other = _episode(store, "the paint dried by the evening", 1)
    before = scores()
    with store.transaction():
        (segment,) = store.insert_nodes("default", "segment", [{"text": "garden shed paint"}])
        store.index_text("default", segment, "segment", "garden shed paint garden shed", None)
        (concept,) = store.insert_nodes("default", "concept", [{"text": "garden_shed"}])
        store.index_text("default", concept, "concept", "garden shed", None)
    assert scores(["episode"]) == before and {r[0] for r in before} == {shed, other}
    everything = [r[0] for r in scores()]
    assert set(everything) == {shed, other, segment, concept}
    assert [r[0] for r in scores(["segment"])] == [segment]
    with store.transaction():  # and forgetting them leaves the memories as they were too
        store.unindex_text([(segment, "default"), (concept, "default")])
    assert scores() == before


def test_old_shared_full_text_table_is_split_by_space(tmp_path: Path) -> None:
    from memcli.store.sqlite.db import connect

    conn = connect(tmp_path / "old.db")
    for _, step in MIGRATIONS[:2]:  # a store as memcli wrote it before per-space tables
        step(conn)
    for node_id, space, text in ((1, "a", "woodturning class"), (2, "b", "woodturning lathe")):
        conn.execute(
            "INSERT INTO nodes (id, space, kind, text, created_at) VALUES (?, ?, 'episode', ?, '')",
            (node_id, space, text),
        )
        conn.execute(
            "INSERT INTO nodes_fts (rowid, text, speaker, space, kind) VALUES (?, ?, '', ?, ?)",
            (node_id, text, space, "episode"),
        )
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    s = open_store(tmp_path / "old.db")
    assert [i for i, _ in s.text_search("a", "woodturning", 5)] == [1]
    assert [i for i, _ in s.text_search("b", "woodturning", 5)] == [2]
    assert not s.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'nodes_fts'").fetchone()
    s.close()


def test_bm25_prefers_the_better_match(store) -> None:
    with store.transaction():
        weak = _episode(store, "the weather was fine and we talked", 0)
        strong = _episode(store, "woodturning class: I made a woodturning bowl", 1)
    ranked = [i for i, _ in store.text_search("default", "What did she make in woodturning?", 5)]
    assert ranked[0] == strong and weak not in ranked


def test_fts_query_drops_stopwords_and_quotes() -> None:
    assert fts_query('What did "Alexandra" do?') == '"alexandra"'
    assert fts_query("???") == ""
    assert fts_query("Where was our trip in May?") == '"trip" OR "may"'  # a month, kept


def test_vector_search_answers_more_than_sqlite_vec_allows_at_once(store) -> None:
    from memcli.store.search import KNN_MAX

    with store.transaction():
        store.ensure_vectors(2)
        ids = [_episode(store, f"turn {i}", i) for i in range(3)]
        store.put_vectors([(i, "default", "episode", [1, 0]) for i in ids])
    assert len(store.vector_search("default", [1, 0], KNN_MAX + 1000)) == 3


def test_provenance_walks_to_episodes_in_order(store) -> None:
    with store.transaction():
        e1, e2 = _episode(store, "one", 1), _episode(store, "two", 2)
        fact = store.insert_node("default", "fact", "a fact")
        refl = store.insert_node("default", "reflection", "an insight")
        seg = store.insert_node("default", "segment", "a topic")
        store.add_edges(
            "default",
            [
                Edge(fact, e2, "DERIVED_FROM"),
                Edge(fact, e1, "DERIVED_FROM"),
                Edge(refl, fact, "DERIVED_FROM_FACT"),
                Edge(e1, seg, "PART_OF"),
            ],
        )
    sources = store.sources_of([fact, refl, seg, e1])
    assert sources == {fact: ["D1:1", "D1:2"], refl: ["D1:1", "D1:2"], seg: ["D1:1"], e1: []}


def test_delete_removes_edges_vectors_and_text(store) -> None:
    with store.transaction():
        a, b = _episode(store, "alpha words", 0), _episode(store, "beta words", 1)
        store.add_edges("default", [Edge(a, b, "NEXT")])
        store.ensure_vectors(2)
        store.put_vectors([(a, "default", "episode", [1, 0]), (b, "default", "episode", [0, 1])])
    with store.transaction():
        store.delete_nodes([a])
    assert store.count_edges("default") == {}
    assert store.text_search("default", "alpha", 5) == []
    assert [i for i, _ in store.vector_search("default", [1, 0], 5)] == [b]


def test_duplicate_edges_are_ignored(store) -> None:
    with store.transaction():
        a, b = _episode(store, "x", 0), _episode(store, "y", 1)
        assert store.add_edges("default", [Edge(a, b, "NEXT"), Edge(a, b, "NEXT")]) == 1
        assert store.add_edges("default", [Edge(a, b, "NEXT")]) == 0  # already there
    assert store.count_edges("default") == {"NEXT": 1}


def test_node_lookup_by_public_id(store) -> None:
    with store.transaction():
        a = _episode(store, "x", 0)
    assert store.node_by_public_id(f"ep{a}", "default").text == "x"
    for bad in (f"fa{a}", "ep999", "zz1", "ep"):
        with pytest.raises(NodeNotFound):
            store.node_by_public_id(bad, "default")
    with pytest.raises(NodeNotFound):
        store.node_by_public_id(f"ep{a}", "elsewhere")


def test_vector_dimension_change_needs_reindex(store) -> None:
    with store.transaction():
        store.ensure_vectors(3)
        store.set_meta("embedding.dim", "3")
    with pytest.raises(DatabaseError, match="reindex"):
        store.ensure_vectors(4)
