"""The in-process vector index gives exactly sqlite-vec's results, and follows the file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memcli.store import Store, open_store
from memcli.store.search import nearest_first
from memcli.store.sqlite.vector_index import _read_fast, _read_scan
from memcli.store.sqlite.vectors import SCAN_BELOW

DIM = 16
KINDS = ("episode", "fact", "segment")
QUERY_KINDS = [("episode", "fact"), None, ("segment",), ("fact",)]


def add_nodes(store: Store, space: str, vectors: np.ndarray, kind: str = "episode") -> list[int]:
    """Nodes of one kind with the given vectors, in one transaction."""
    with store.transaction():
        ids = store.insert_nodes(space, kind, [{"text": f"n{i}"} for i in range(len(vectors))])
        if not store.has_vectors():
            store.ensure_vectors(DIM)
            store.set_meta("embedding.dim", str(DIM))
        store.put_vectors((i, space, kind, v) for i, v in zip(ids, vectors, strict=True))
    return ids


def random_vectors(n: int, seed: int) -> np.ndarray:
    """Unnormalised vectors (cosine must divide by the norms), with exact duplicates."""
    rng = np.random.default_rng(seed)
    out = rng.normal(size=(n, DIM)).astype(np.float32) * rng.uniform(0.5, 3, (n, 1))
    twins = min(40, n // 2)
    out[n // 2 : n // 2 + twins] = out[:twins]  # equal vectors: equal distances, ties
    return out.astype(np.float32)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """(warm, plain): two connections to one file with SCAN_BELOW+ vectors in space `a`;
    the first searches its in-process index, the second sqlite-vec's scan."""
    path = tmp_path / "m.db"
    writer = open_store(path)
    for n, kind in enumerate(KINDS):
        add_nodes(writer, "a", random_vectors(SCAN_BELOW // 2 + 300, n), kind)
    add_nodes(writer, "b", random_vectors(50, 9))
    warm = open_store(path)
    warm.use_vector_index()
    yield warm, writer
    warm.close()
    writer.close()


def queries(store: Store, seed: int = 3) -> list[np.ndarray]:
    """Stored vectors (ties with their duplicates), slightly moved ones, and random ones."""
    rng = np.random.default_rng(seed)
    stored = list(store.get_vectors([1, 2, 30, 5000]).values())
    moved = [v + rng.normal(0, 0.01, DIM).astype(np.float32) for v in stored]
    return [*stored, *moved, *rng.normal(size=(4, DIM)).astype(np.float32)]


def assert_same_results(warm: Store, plain: Store, space: str = "a") -> None:
    assert warm._warm_index() is not None
    for query in queries(plain):
        for kinds in QUERY_KINDS:
            for limit in (1, 10, 45, 300):
                got = warm.vector_search(space, query, limit, kinds)
                want = plain.vector_search(space, query, limit, kinds)
                assert got == want, (limit, kinds)
                assert len(got) == limit


def test_the_index_ranks_exactly_as_sqlite_vec(stores: tuple[Store, Store]) -> None:
    warm, plain = stores
    assert warm._index is not None and warm._index.count("a", None) >= SCAN_BELOW
    assert_same_results(warm, plain)
    query = queries(plain)[4]
    assert warm.vector_search("b", query, 10) == plain.vector_search("b", query, 10)


def test_equal_distances_are_ordered_by_node_id(stores: tuple[Store, Store]) -> None:
    warm, plain = stores
    twin = plain.get_vectors([1])[1]  # node 1 and its duplicate share a distance of 0
    found = plain.vector_search("a", twin, 2, ("episode",))
    assert [d for _, d in found] == pytest.approx([1.0, 1.0])
    assert found[0][0] < found[1][0] and warm.vector_search("a", twin, 2, ("episode",)) == found


def test_vectors_are_served_from_the_index(stores: tuple[Store, Store]) -> None:
    warm, plain = stores
    ids = [1, 7, 4000, 9000, 999_999]
    got, want = warm.get_vectors(ids), plain.get_vectors(ids)
    assert sorted(got) == sorted(want) and all(np.array_equal(got[i], want[i]) for i in want)


def test_vectors_appended_by_another_connection_are_seen(stores: tuple[Store, Store]) -> None:
    warm, plain = stores
    loaded = warm._index.size
    new = add_nodes(plain, "a", random_vectors(30, 11))
    assert_same_results(warm, plain)
    assert warm._index.size == loaded + 30
    near = plain.get_vectors([new[0]])[new[0]]  # new[0] and its twin new[15]: the lower id
    assert warm.vector_search("a", near, 1)[0][0] == new[0]


def test_replaced_and_deleted_vectors_are_seen(stores: tuple[Store, Store]) -> None:
    warm, plain = stores
    target = np.full(DIM, 7.0, dtype=np.float32)
    with plain.transaction():
        plain.put_vectors([(3, "a", "episode", target)])
    assert warm.vector_search("a", target, 1)[0][0] == 3
    assert_same_results(warm, plain)
    with plain.transaction():
        plain.delete_nodes([3])
    assert warm.vector_search("a", target, 1)[0][0] != 3
    assert 3 not in warm.get_vectors([3])
    assert_same_results(warm, plain)


def test_a_dropped_and_rebuilt_table_is_reloaded(stores: tuple[Store, Store]) -> None:
    warm, plain = stores
    with plain.transaction():
        plain.drop_vectors()
    assert warm.vector_search("a", np.ones(DIM), 5) == []
    with plain.transaction():
        plain.ensure_vectors(DIM)
    for n, kind in enumerate(KINDS):  # every kind the comparison searches
        add_nodes(plain, "a", random_vectors(SCAN_BELOW // 2 + 10, 21 + n), kind)
    assert_same_results(warm, plain)


def test_inside_a_write_transaction_the_scan_sees_uncommitted_vectors(
    stores: tuple[Store, Store],
) -> None:
    warm, _ = stores
    target = np.full(DIM, -5.0, dtype=np.float32)
    with warm.transaction():
        [new] = warm.insert_nodes("a", "episode", [{"text": "fresh"}])
        warm.put_vectors([(new, "a", "episode", target)])
        assert warm.vector_search("a", target, 1)[0][0] == new
    assert warm.vector_search("a", target, 1)[0][0] == new  # and the index after commit


def test_the_fast_read_equals_the_virtual_table_scan(stores: tuple[Store, Store]) -> None:
    _, plain = stores
    fast = _read_fast(plain.conn)
    assert fast is not None
    scan_ids, scan_matrix = _read_scan(plain.conn)
    order = np.argsort(fast[0])
    assert np.array_equal(fast[0][order], np.sort(scan_ids))
    assert np.array_equal(fast[1][order], scan_matrix[np.argsort(scan_ids)])


def test_a_store_without_vectors_can_be_warmed(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.db") as store:
        store.use_vector_index()
        assert store.vector_search("a", np.ones(DIM), 5) == []
        assert store._index is not None and store._index.size == 0


def test_distances_apart_only_by_rounding_are_one_distance_ordered_by_node_id() -> None:
    # What sqlite-vec and pgvector answer for the same two equidistant nodes differs in
    # the last float32 bits, and in either direction.
    sqlite_like = [(0.30000001, 9), (0.30000004, 4), (0.25, 7), (0.5, 1)]
    postgres_like = [(0.30000004, 9), (0.30000001, 4), (0.25000002, 7), (0.5, 1)]
    order = [node for node, _ in nearest_first(sqlite_like, 4)]
    assert order == [7, 4, 9, 1]
    assert [node for node, _ in nearest_first(postgres_like, 4)] == order
    assert [node for node, _ in nearest_first(sqlite_like, 2)] == [7, 4]
    # Distinct distances keep their order whatever the ids.
    assert [node for node, _ in nearest_first([(0.2, 5), (0.1, 6)], 2)] == [6, 5]
    assert nearest_first([(0.25, 7)], 1) == [(7, 0.75)]
