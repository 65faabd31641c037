"""Batched writes: ids, rollback, counts and repeated marks, on both backends."""

from __future__ import annotations

import pytest

from memcli.models import Edge
from memcli.store import open_store


@pytest.fixture
def store(store_target: str):
    """A new store of each backend (SQLite file, Postgres schema)."""
    s = open_store(store_target)
    yield s
    s.close()


def _rows(*texts: str) -> list[dict]:
    return [{"text": t, "session": "s1", "seq": i, "key": f"k{i}"} for i, t in enumerate(texts)]


def test_a_batch_of_nodes_gets_ids_in_order_and_full_text_rows(store) -> None:
    with store.transaction():
        ids = store.insert_nodes("a", "episode", _rows("red kite", "blue heron", "red fox"))
    assert ids == [ids[0], ids[0] + 1, ids[0] + 2]
    assert [store.get_node(i).text for i in ids] == ["red kite", "blue heron", "red fox"]
    assert store.get_node(ids[1]).props == {} and store.get_node(ids[1]).session == "s1"
    found = [i for i, _ in store.text_search("a", "red", 5)]
    # "blue heron" is found too, by its context (the turn before it), below both red turns.
    assert sorted(found[:2]) == [ids[0], ids[2]] and found[2:] == [ids[1]]
    assert store.ids_for_keys("a", "episode", ["k2"]) == [ids[2]]


def test_ids_of_removed_nodes_are_never_given_again(store) -> None:
    with store.transaction():
        ids = store.insert_nodes("a", "episode", _rows("one", "two"))
        store.delete_nodes([ids[-1]])
        again = store.insert_nodes("a", "episode", [{"text": "three"}])
    assert again == [ids[-1] + 1]
    assert store.text_search("a", "two", 5) == []


def test_writes_roll_back_with_the_transaction(store) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        ids = store.insert_nodes("a", "episode", _rows("a heron", "a kite"))
        store.add_edges("a", [Edge(ids[0], ids[1], "NEXT")])
        store.mark_processed("a", "segment", ids)
        raise RuntimeError("crash before commit")
    assert store.count_nodes("a") == {} and store.count_edges("a") == {}
    assert store.text_search("a", "heron", 5) == []
    assert store.unprocessed("a", "segment") == []


def test_new_edges_are_counted_exactly_after_full_text_writes(store) -> None:
    with store.transaction():
        a, b, c = store.insert_nodes("a", "episode", _rows("x", "y", "z"))
        assert store.add_edges("a", [Edge(a, b, "NEXT"), Edge(a, b, "NEXT")]) == 1
        store.insert_node("a", "episode", "more words to index")
        assert store.add_edges("a", [Edge(a, b, "NEXT"), Edge(b, c, "NEXT")]) == 1
        assert store.add_edges("a", []) == 0
    assert [(e.src, e.dst) for e in store.iter_edges("a")] == [(a, b), (b, c)]


def test_a_repeated_edge_keeps_its_first_weight(store) -> None:
    with store.transaction():
        a, b = store.insert_nodes("a", "segment", _rows("x", "y"))
        store.add_edges("a", [Edge(a, b, "RELATED", 0.9), Edge(a, b, "RELATED", 0.1)])
        store.add_edges("a", [Edge(a, b, "RELATED", 0.5)])
    assert [e.weight for e in store.edges_of([a])] == [0.9]


def test_marks_and_source_links_may_be_repeated_one_at_a_time(store) -> None:
    with store.transaction():
        (node,) = store.insert_nodes("a", "episode", _rows("x"))
        source = store.insert_source("a", "f.json", "abc", "json", 1)
        for _ in range(2):
            store.mark_processed("a", "segment", [node])
            store.link_sources([(node, source)])
    assert store.processed_among("segment", [node]) == {node}
    assert store.source_paths(node) == ["f.json"]
    assert store.source_links([node]) == {node: {source}}


def test_clearing_counts_what_was_removed_after_full_text_writes(store) -> None:
    from memcli.store.work import CachedReply

    store.cache_put("k1", "p", "m", CachedReply("{}", 1, 1))
    store.cache_put("k2", "p", "m", CachedReply("{}", 1, 1))
    with store.transaction():
        run = store.run_start("a", "segment")
        store.insert_nodes("a", "episode", _rows("words", "more words"))
        assert store.clear_llm_cache() == 2
        assert store.delete_runs("a") == 1
    assert store.llm_cache_size() == 0 and store.last_runs("a") == []
    assert run > 0


def test_failed_runs_are_counted_per_stage_and_node_and_go_with_the_node(store) -> None:
    with store.transaction():
        a, b = store.insert_nodes("a", "episode", _rows("x", "y"))
        assert store.count_failed("a", "facts", [a, b]) == {a: 1, b: 1}
    with store.transaction():
        assert store.count_failed("a", "facts", [a, a]) == {a: 2}  # once per call
        assert store.count_failed("a", "link", [a]) == {a: 1}  # stages count apart
        store.delete_nodes([a])
    with store.transaction():
        (c,) = store.insert_nodes("a", "episode", [{"text": "z"}])
        assert store.count_failed("a", "facts", [b, c]) == {b: 2, c: 1}
