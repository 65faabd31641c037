"""Personalized PageRank in plain Python dict loops: the reference igraph is checked against.

It computes what `memcli.graph.personalized_pagerank` computes (same edge-type weights,
both directions walked, hubs leaking their excess mass to the teleport vector) by power
iteration, as GAAMA describes it: at most `max_iter` rounds, stopping when the L1 change is
below `tol`. The benchmark times it against igraph; the tests compare their rankings.
"""

from __future__ import annotations

from collections.abc import Mapping

from memcli.graph import DEFAULT_TYPE_WEIGHT, LocalGraph


def reference_ppr(
    graph: LocalGraph,
    reset: Mapping[int, float],
    *,
    type_weights: Mapping[str, float],
    damping: float = 0.85,
    hub_threshold: int = 0,
    into: Mapping[int, float] | None = None,
    max_iter: int = 200,
    tol: float = 1e-6,
) -> dict[int, float]:
    """node id -> PageRank, by power iteration over dicts of transition probabilities."""
    total = sum(max(v, 0.0) for v in reset.values())
    teleport = {n: max(reset.get(n, 0.0), 0.0) / total for n in graph.nodes} if total else {}
    if not teleport:
        return {}
    out: dict[int, dict[int, float]] = {n: {} for n in graph.nodes}
    for src, dst, typ, stored in graph.edges:
        w = type_weights.get(typ, DEFAULT_TYPE_WEIGHT) * max(stored, 0.0)
        for a, b in ((src, dst), (dst, src)):
            step = w * (into.get(b, 0.0) if into is not None else 1.0)
            if step > 0:
                out[a][b] = out[a].get(b, 0.0) + step
    incoming: dict[int, list[tuple[int, float]]] = {n: [] for n in graph.nodes}
    kept: dict[int, float] = {}  # share of a node's mass that goes on along its edges
    for node, targets in out.items():
        weight = sum(targets.values())
        deg = graph.degree.get(node, 0)
        kept[node] = hub_threshold / deg if hub_threshold and deg > hub_threshold else 1.0
        for target, w in targets.items():
            incoming[target].append((node, kept[node] * w / weight))
    rank = dict(teleport)
    for _ in range(max_iter):
        # Mass that cannot go on (no edges, or a hub's excess) restarts from the teleport.
        stuck = sum(r * (1.0 - kept[n]) if out[n] else r for n, r in rank.items())
        new = {}
        for node in graph.nodes:
            value = (1.0 - damping + damping * stuck) * teleport[node]
            for source, p in incoming[node]:
                value += damping * rank[source] * p
            new[node] = value
        change = sum(abs(new[n] - rank[n]) for n in graph.nodes)
        rank = new
        if change < tol:
            break
    return rank
