"""graph.py: local subgraphs from store rows, transition weights, hub dampening, PageRank."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memcli.graph import LocalGraph, expand, max_normalised, personalized_pagerank, walk
from memcli.retrieval.params import GraphParams
from tests.bench.reference import reference_ppr
from tests.graph_helpers import Builder

WEIGHTS = GraphParams().type_weights()


def ppr(graph: LocalGraph, reset: dict[int, float], **kw: object) -> dict[int, float]:
    return personalized_pagerank(graph, reset, type_weights=kw.pop("tw", WEIGHTS), **kw)  # type: ignore[arg-type]


def test_ppr_prefers_nodes_near_the_heavier_seed() -> None:
    # Two chains hanging off two seeds; the heavier seed's neighbours must score higher.
    edges = [(901, 17, "NEXT", 1.0), (17, 5, "NEXT", 1.0), (44, 3000, "NEXT", 1.0)]
    edges += [(3000, 8, "NEXT", 1.0)]
    graph = LocalGraph.build([901, 17, 5, 44, 3000, 8], edges)
    scores = ppr(graph, {901: 0.9**2, 44: 0.3**2})
    assert scores[17] > scores[3000]
    assert scores[5] > scores[8]
    assert scores[17] > scores[5]  # mass fades with distance from the seed
    assert sum(scores.values()) == pytest.approx(1.0)


def test_results_are_keyed_by_node_ids_not_vertex_indices() -> None:
    nodes = [7000, 12, 555, 3]
    graph = LocalGraph.build(nodes, [(7000, 555, "NEXT", 1.0)])
    assert graph.index == {7000: 0, 12: 1, 555: 2, 3: 3}
    scores = ppr(graph, {7000: 1.0})
    assert set(scores) == set(nodes)
    assert scores[555] > 0 and scores[12] == 0 and scores[3] == 0  # 12 and 3 are unreachable


def test_edge_type_weights_steer_the_walk() -> None:
    edges = [(10, 20, "NEXT", 1.0), (10, 30, "DERIVED_FROM_FACT", 1.0)]
    graph = LocalGraph.build([10, 20, 30], edges)
    default = ppr(graph, {10: 1.0})
    assert default[20] > default[30]  # NEXT 0.8 beats DERIVED_FROM_FACT 0.5
    flipped = ppr(graph, {10: 1.0}, tw={**WEIGHTS, "NEXT": 0.1})
    assert flipped[30] > flipped[20]


def test_stored_edge_weight_scales_the_type_weight() -> None:
    edges = [(1, 2, "RELATED", 0.9), (1, 3, "RELATED", 0.2)]
    scores = ppr(LocalGraph.build([1, 2, 3], edges), {1: 1.0})
    assert scores[2] > scores[3]


def test_hub_dampening_limits_mass_passing_through_a_hub() -> None:
    # seed -> hub -> target, and the hub has 60 other neighbours (degree 62 > 50).
    leaves = list(range(1000, 1060))
    edges = [(1, 2, "HAS_CONCEPT", 1.0), (3, 2, "HAS_CONCEPT", 1.0)]
    edges += [(leaf, 2, "HAS_CONCEPT", 1.0) for leaf in leaves]
    graph = LocalGraph.build([1, 2, 3, *leaves], edges)
    free = ppr(graph, {1: 1.0}, hub_threshold=0)
    damped = ppr(graph, {1: 1.0}, hub_threshold=50)
    assert damped[3] < free[3]
    assert damped[1] > free[1]  # what the hub did not pass on restarts at the seed
    # Order among the hub's neighbours is kept.
    assert damped[3] == pytest.approx(damped[1000])


def test_query_conditioned_weights_favour_relevant_targets() -> None:
    graph = LocalGraph.build([1, 2, 3], [(1, 2, "NEXT", 1.0), (1, 3, "NEXT", 1.0)])
    plain = ppr(graph, {1: 1.0})
    assert plain[2] == pytest.approx(plain[3])
    tilted = ppr(graph, {1: 1.0}, into={1: 1.0, 2: 0.9, 3: 0.1})
    assert tilted[2] > tilted[3]


def test_all_zero_edge_weights_keep_the_mass_at_the_reset_nodes() -> None:
    g = LocalGraph.build([10, 20, 30], [(10, 20, "NEXT", 1.0), (20, 30, "NEXT", 1.0)])
    still = ppr(g, {10: 1.0}, tw={"NEXT": 0.0})
    assert still == {10: 1.0, 20: 0.0, 30: 0.0}  # not "no weights", which igraph reads as 1
    assert ppr(g, {10: 1.0}, tw={"NEXT": 0.5})[20] > 0


def test_empty_or_zero_reset_gives_nothing() -> None:
    graph = LocalGraph.build([1, 2], [(1, 2, "NEXT", 1.0)])
    assert ppr(graph, {}) == {}
    assert ppr(graph, {1: 0.0, 99: 1.0}) == {}
    assert ppr(LocalGraph.build([], []), {1: 1.0}) == {}


@pytest.mark.parametrize("hub_threshold", [0, 4])
@pytest.mark.parametrize("conditioned", [False, True])
def test_ppr_matches_the_plain_python_reference(hub_threshold: int, conditioned: bool) -> None:
    rng = random.Random(hub_threshold * 10 + conditioned)
    ids = rng.sample(range(10, 100_000), 80)
    types = list(WEIGHTS)
    edges = [
        (rng.choice(ids), rng.choice(ids), rng.choice(types), rng.random()) for _ in range(300)
    ]
    graph = LocalGraph.build(ids, edges)
    reset = {i: rng.random() for i in rng.sample(ids, 8)}
    into = {i: rng.random() for i in ids} if conditioned else None
    got = ppr(graph, reset, hub_threshold=hub_threshold, into=into)
    want = reference_ppr(
        graph, reset, type_weights=WEIGHTS, hub_threshold=hub_threshold, into=into,
        max_iter=1000, tol=1e-12,
    )  # fmt: skip
    assert max(abs(got[n] - want[n]) for n in ids) < 1e-9


def test_walk_lays_edges_out_as_igraphs_mutual_view() -> None:
    """The walk's edges and their order are those of igraph's undirected graph made
    "mutual", plus one edge per hub into the sink vertex (the order PageRank sums in)."""
    import igraph

    rng = random.Random(5)
    ids = rng.sample(range(10, 100_000), 60)
    edges = [(rng.choice(ids), rng.choice(ids), "NEXT", 1.0) for _ in range(200)]
    graph = LocalGraph.build(ids, edges)
    graph.degree = {n: (9 if i % 7 == 0 else 1) for i, n in enumerate(graph.nodes)}
    view = igraph.Graph(n=len(graph) + 1, edges=graph.pairs, directed=False)
    view.to_directed(mode="mutual")
    got, weights = walk(graph, WEIGHTS, hub_threshold=4)
    hubs = [v for v, n in enumerate(graph.nodes) if graph.degree[n] > 4]
    assert [tuple(e) for e in got.tolist()] == view.get_edgelist() + [(h, 60) for h in hubs]
    assert len(weights) == len(got)


def test_build_drops_edges_leaving_the_node_set_and_self_loops() -> None:
    graph = LocalGraph.build(
        [1, 2], [(1, 2, "NEXT", 1.0), (2, 9, "NEXT", 1.0), (1, 1, "NEXT", 1.0)]
    )
    assert graph.edges == [(1, 2, "NEXT", 1.0)]
    assert graph.pairs == [(0, 1)]
    assert graph.degree == {1: 1, 2: 1}


def test_max_normalised() -> None:
    assert max_normalised({1: 2.0, 2: 1.0}) == {1: 1.0, 2: 0.5}
    assert max_normalised({1: 0.0}) == {1: 0.0}


def _chain_store(tmp_path: Path) -> tuple[Builder, list[int]]:
    b = Builder(tmp_path / "g.db", vectors=False)
    turns = [b.node("episode", f"turn {i}") for i in range(6)]
    b.chain(turns)
    return b, turns


def test_expand_reads_the_neighbourhood_to_the_given_depth(tmp_path: Path) -> None:
    b, t = _chain_store(tmp_path)
    graph = expand(b.store, [t[0]], 2)
    assert set(graph.nodes) == {t[0], t[1], t[2]}
    assert graph.hops == {t[0]: 0, t[1]: 1, t[2]: 2}
    assert sorted(graph.edges) == sorted([(t[0], t[1], "NEXT", 1.0), (t[1], t[2], "NEXT", 1.0)])
    assert graph.degree[t[2]] == 2  # store degree, not local degree
    assert set(expand(b.store, [t[2]], 1).nodes) == {t[1], t[2], t[3]}
    b.close()


def test_expand_does_not_fan_out_through_hubs(tmp_path: Path) -> None:
    b = Builder(tmp_path / "g.db", vectors=False)
    seed = b.node("episode", "seed")
    hub = b.node("concept", "hub")
    others = [b.node("episode", f"other {i}") for i in range(5)]
    for n in [seed, *others]:
        b.edge(n, hub, "HAS_CONCEPT")
    assert set(expand(b.store, [seed], 2).nodes) == {seed, hub, *others}
    limited = expand(b.store, [seed], 2, hub_threshold=3)
    assert set(limited.nodes) == {seed, hub}
    capped = expand(b.store, [seed], 2, max_nodes=4)
    assert len(capped) == 4
    typed = expand(b.store, [seed], 2, types=["NEXT"])
    assert typed.nodes == [seed]
    b.close()


def test_store_graph_reads(tmp_path: Path) -> None:
    b, t = _chain_store(tmp_path)
    assert {(s, d) for s, d, _, _ in b.store.edge_rows([t[1]])} == {(t[0], t[1]), (t[1], t[2])}
    assert b.store.edge_rows([t[1]], ["PART_OF"]) == []
    within = b.store.edges_within([t[0], t[1], t[3]])
    assert [(s, d) for s, d, _, _ in within] == [(t[0], t[1])]
    assert b.store.degrees([t[0], t[3], 999_999]) == {t[0]: 1, t[3]: 2, 999_999: 0}
    assert b.store.kinds_of([t[0]]) == {t[0]: "episode"}
    b.close()


def test_store_kinds_present_and_point_vector_reads(tmp_path: Path) -> None:
    b = Builder(tmp_path / "v.db")
    ids = [b.node("episode", f"turn {i}") for i in range(3)]
    assert b.store.kinds_present("default", ["episode", "segment"]) == {"episode"}
    assert set(b.store.get_vectors([*ids, 999_999])) == set(ids)  # unknown ids are absent
    many = b.store.get_vectors(ids * 100)  # repeated ids are read once
    assert set(many) == set(ids)
    b.close()
