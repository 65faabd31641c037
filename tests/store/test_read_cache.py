"""The read cache gives exactly the plain reads' results, and follows every writer."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memcli.models import Edge
from memcli.store import Store, open_store
from memcli.store.sqlite import read_cache
from tests.cli_runner import REPO, clean_env

TYPES = ("NEXT", "PART_OF", "DERIVED_FROM", "MENTIONS", "RELATED")


def build_graph(store: Store, nodes: int, edges: int, seed: int) -> list[int]:
    """Nodes of three kinds (some with props) and random typed, weighted edges."""
    rng = random.Random(seed)
    with store.transaction():
        ids = []
        for kind in ("episode", "fact", "concept"):
            rows = [
                {"text": f"{kind} {i}", "props": {"n": i} if i % 3 else {}} for i in range(nodes)
            ]
            ids += store.insert_nodes("a", kind, rows)
        pairs = {(rng.choice(ids), rng.choice(ids), rng.choice(TYPES)) for _ in range(edges)}
        store.add_edges("a", [Edge(s, d, t, rng.choice((0.5, 1.0, 2.0))) for s, d, t in pairs])
    return ids


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Store, Store, list[int]]]:
    """(warm, plain, node ids): two connections to one graph, the first with the cache."""
    path = tmp_path / "m.db"
    plain = open_store(path)
    ids = build_graph(plain, 300, 3000, 1)
    warm = open_store(path)
    warm.use_read_cache()
    yield warm, plain, ids
    warm.close()
    plain.close()


def assert_same_reads(warm: Store, plain: Store, ids: list[int], seed: int = 2) -> None:
    """Every cached read equals the plain one, order included, over random id sets (with
    repeats, unknown ids and more ids than one chunk), twice so the second run is cached."""
    rng = random.Random(seed)
    picks = [[*rng.choices(ids, k=n), 10**6] for n in (1, 5, 40, 700)]
    for _ in range(2):
        for pick in picks:
            assert warm.edge_rows(pick) == plain.edge_rows(pick)
            assert warm.edge_rows(pick, ["NEXT"]) == plain.edge_rows(pick, ["NEXT"])
            assert warm.edges_within(pick) == plain.edges_within(pick)
            assert warm.edges_within(pick, TYPES[:2]) == plain.edges_within(pick, TYPES[:2])
            assert list(warm.degrees(pick).items()) == list(plain.degrees(pick).items())
            assert list(warm.kinds_of(pick).items()) == list(plain.kinds_of(pick).items())
            assert list(warm.nodes_by_ids(pick).items()) == list(plain.nodes_by_ids(pick).items())
            assert warm.segments_of(pick) == plain.segments_of(pick)


def test_cached_reads_equal_plain_reads(stores: tuple[Store, Store, list[int]]) -> None:
    warm, plain, ids = stores
    assert_same_reads(warm, plain, ids)
    assert warm._memo is not None and warm._memo.rows and warm._memo.out
    assert any(warm._memo.segments.values())


def test_returned_nodes_are_fresh_objects(stores: tuple[Store, Store, list[int]]) -> None:
    warm, plain, ids = stores
    node = warm.nodes_by_ids([ids[1]])[ids[1]]
    node.props["changed"] = True
    node.text = "changed"
    assert warm.nodes_by_ids([ids[1]]) == plain.nodes_by_ids([ids[1]])


WRITER = """
import sys
from memcli.models import Edge
from memcli.store import open_store
store = open_store(sys.argv[1])
a, b, c = (int(x) for x in sys.argv[2:5])
with store.transaction():
    store.add_edges("a", [Edge(a, b, "NEXT", 3.0), Edge(b, c, "RELATED", 1.0)])
    store.update_node(c, text="rewritten by another process", props={"n": -1})
    store.delete_nodes([a + 1])
"""


def test_writes_by_another_process_are_seen(stores: tuple[Store, Store, list[int]]) -> None:
    warm, plain, ids = stores
    assert_same_reads(warm, plain, ids)
    before = warm.edge_rows([ids[0]])
    args = [str(warm.path), str(ids[0]), str(ids[500]), str(ids[7])]
    subprocess.run([sys.executable, "-c", WRITER, *args], check=True, env=clean_env(), cwd=REPO)
    assert warm.edge_rows([ids[0]]) != before
    assert warm.nodes_by_ids([ids[7]])[ids[7]].text == "rewritten by another process"
    assert ids[1] not in warm.kinds_of(ids[:3]) and ids[1] not in warm.nodes_by_ids(ids[:3])
    assert_same_reads(warm, plain, ids, seed=3)


def test_own_writes_are_seen(stores: tuple[Store, Store, list[int]]) -> None:
    warm, plain, ids = stores
    assert_same_reads(warm, plain, ids)
    with warm.transaction():
        warm.add_edges("a", [Edge(ids[3], ids[4], "NEXT", 5.0)])
        warm.update_node(ids[4], text="changed here")
    assert (ids[3], ids[4], "NEXT", 5.0) in warm.edge_rows([ids[3]])
    assert warm.nodes_by_ids([ids[4]])[ids[4]].text == "changed here"
    assert_same_reads(warm, plain, ids, seed=4)


def test_a_rolled_back_write_leaves_nothing_cached(stores: tuple[Store, Store, list[int]]) -> None:
    warm, plain, ids = stores
    assert_same_reads(warm, plain, ids)
    with pytest.raises(RuntimeError), warm.transaction():
        warm.add_edges("a", [Edge(ids[5], ids[6], "NEXT", 7.0)])
        warm.update_node(ids[6], text="never committed")
        assert (ids[5], ids[6], "NEXT", 7.0) in warm.edge_rows([ids[5]])  # its own write
        assert warm.nodes_by_ids([ids[6]])[ids[6]].text == "never committed"
        raise RuntimeError("roll back")
    assert (ids[5], ids[6], "NEXT", 7.0) not in warm.edge_rows([ids[5]])
    assert warm.nodes_by_ids([ids[6]])[ids[6]].text != "never committed"
    assert_same_reads(warm, plain, ids, seed=5)


def test_a_full_cache_starts_over(
    stores: tuple[Store, Store, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    warm, plain, ids = stores
    monkeypatch.setattr(read_cache, "ROW_LIMIT", 50)
    monkeypatch.setattr(read_cache, "EDGE_LIMIT", 200)
    warm.nodes_by_ids(ids[:60])
    assert warm._memo is not None and len(warm._memo.rows) == 60
    assert warm.nodes_by_ids(ids[:3]) == plain.nodes_by_ids(ids[:3])
    assert len(warm._memo.rows) == 3
    warm.edges_within(ids[:200])
    assert len(warm._memo.out) == 200
    assert warm.edges_within(ids[:3]) == plain.edges_within(ids[:3])
    assert len(warm._memo.out) == 3 and not warm._memo.rows
    assert_same_reads(warm, plain, ids)
