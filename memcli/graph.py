"""A per-query view of a local subgraph, and Personalized PageRank over it.

The view is built from store rows on demand and thrown away after the query (a warm
process keeps the rows themselves: memcli.store.sqlite.read_cache). Vertices are numbered 0..n-1;
`LocalGraph.nodes` and `LocalGraph.index` map between those indices and store node ids,
and nothing outside this module ever sees a vertex index. igraph writes exported graphs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcli.store import Store

EdgeRow = tuple[int, int, str, float]  # (src node id, dst node id, type, stored weight)

# Edge types seen in no weight table still carry some mass (GAAMA's fallback).
DEFAULT_TYPE_WEIGHT = 0.5


@dataclass
class LocalGraph:
    """Store nodes as igraph vertices: `nodes[v]` is the node id of vertex v."""

    nodes: list[int]
    index: dict[int, int]
    edges: list[EdgeRow]
    degree: dict[int, int] = field(default_factory=dict)  # whole-store degree of each node
    hops: dict[int, int] = field(default_factory=dict)  # distance from the nearest seed
    pairs: list[tuple[int, int]] = field(default_factory=list)  # edges as vertex indices

    @classmethod
    def build(
        cls,
        node_ids: Iterable[int],
        edges: Iterable[EdgeRow],
        degree: Mapping[int, int] | None = None,
        hops: Mapping[int, int] | None = None,
    ) -> LocalGraph:
        """A graph over the given nodes; edges with an end outside them are dropped."""
        nodes = list(dict.fromkeys(node_ids))
        index = {node: v for v, node in enumerate(nodes)}
        kept = [e for e in edges if e[0] in index and e[1] in index and e[0] != e[1]]
        deg = dict(degree or {})
        for node in nodes:  # a node whose store degree is unknown counts its local edges
            deg.setdefault(node, 0)
        if degree is None:
            for src, dst, _, _ in kept:
                deg[src] += 1
                deg[dst] += 1
        pairs = [(index[e[0]], index[e[1]]) for e in kept]
        return cls(nodes, index, kept, deg, dict(hops or {}), pairs)

    def __len__(self) -> int:
        return len(self.nodes)


def expand(
    store: Store,
    seeds: Sequence[int],
    depth: int,
    *,
    types: Sequence[str] | None = None,
    hub_threshold: int = 0,
    max_nodes: int = 0,
) -> LocalGraph:
    """Seeds plus everything within `depth` hops, with every edge among them.

    Hubs (store degree above `hub_threshold`, when it is positive) are kept as vertices but
    not expanded through: their mass is damped anyway, and fanning out from a node with
    thousands of edges would make one query read a large part of the store. `max_nodes`
    (when positive) stops the expansion once the subgraph is that large.
    """
    hops = {node: 0 for node in seeds}
    frontier = list(hops)
    degree: dict[int, int] = {}
    for hop in range(1, depth + 1):
        if not frontier:
            break
        degree.update(store.degrees(frontier))
        open_ = [n for n in frontier if not hub_threshold or degree[n] <= hub_threshold]
        rows = store.edge_rows(open_, types) if open_ else []
        frontier = []
        for src, dst, _, _ in _by_stronger_end(rows, open_):
            for node in (src, dst):
                if node not in hops and not (max_nodes and len(hops) >= max_nodes):
                    hops[node] = hop
                    frontier.append(node)
    rest = [n for n in hops if n not in degree]
    if rest:
        degree.update(store.degrees(rest))
    return LocalGraph.build(hops, store.edges_within(list(hops), types), degree, hops)


def _by_stronger_end(rows: list[EdgeRow], order: Sequence[int]) -> list[EdgeRow]:
    """Edges of the nodes in `order` (strongest first), those of stronger nodes first, so a
    size cap keeps the most relevant part: a stable sort by the rank of the edge's better
    ranked end, done as buckets (a key function per row cost more than the rest of it)."""
    rank = {node: i for i, node in enumerate(order)}
    far = len(rank)
    buckets: defaultdict[int, list[EdgeRow]] = defaultdict(list)
    for row in rows:
        buckets[min(rank.get(row[0], far), rank.get(row[1], far))].append(row)
    return [row for key in sorted(buckets) for row in buckets[key]]


def walk(
    graph: LocalGraph,
    type_weights: Mapping[str, float],
    hub_threshold: int = 0,
    into: Mapping[int, float] | None = None,
) -> tuple[Any, Any]:
    """A directed graph that follows every edge both ways: its edges as an (m, 2) array of
    vertex indices, and their weights.

    An edge's weight is its type's weight times its stored weight, times `into[target]` when
    given (query-conditioned weights). A hub (store degree above `hub_threshold`) sends only
    threshold/degree of its mass to its neighbours: the rest goes to an extra sink vertex
    (index len(graph)) with no out-edges, whose mass PageRank hands back to the teleport
    vector. Plain rescaling of a hub's weights would cancel out in the per-source
    normalisation; the sink is what actually limits the mass passing through a hub.
    The edges come in igraph's "mutual" order (every edge lower->higher vertex, then every
    edge reversed, then the sink edges), built with numpy: a query's subgraph has thousands
    of edges, and a round trip through igraph cost more than the walk itself.
    """
    import numpy as np

    lower, higher, weights = _both_ways(graph, type_weights, into)
    edges = np.concatenate([np.stack([lower, higher], 1), np.stack([higher, lower], 1)])
    if hub_threshold > 0 and len(weights):
        sinks, weights = _add_hub_sink(graph, lower, higher, weights, hub_threshold)
        edges = np.concatenate([edges, sinks])
    return edges.reshape(-1, 2), weights


def _both_ways(
    graph: LocalGraph, type_weights: Mapping[str, float], into: Mapping[int, float] | None
) -> tuple[Any, Any, Any]:
    """(lower vertex, higher vertex, weights): the weights of every edge lower->higher,
    then of every edge higher->lower, in edge order (as igraph's "mutual" lays them out)."""
    import numpy as np

    count = len(graph.pairs)
    first = np.fromiter(map(itemgetter(0), graph.pairs), dtype=np.int64, count=count)
    second = np.fromiter(map(itemgetter(1), graph.pairs), dtype=np.int64, count=count)
    lower, higher = np.minimum(first, second), np.maximum(first, second)
    types = list(map(itemgetter(2), graph.edges))
    per_type = {t: type_weights.get(t, DEFAULT_TYPE_WEIGHT) for t in set(types)}
    stored = np.fromiter(map(itemgetter(3), graph.edges), dtype=float, count=len(types))
    base = np.fromiter(map(per_type.__getitem__, types), float, len(types)) * stored.clip(0)
    up, down = base, base
    if into is not None:
        factor = np.zeros(len(graph) + 1)
        for node, value in into.items():
            if node in graph.index:
                factor[graph.index[node]] = value
        up, down = base * factor[higher], base * factor[lower]
    return lower, higher, np.concatenate([up, down])


def _add_hub_sink(
    graph: LocalGraph, lower: Any, higher: Any, weights: Any, hub_threshold: int
) -> tuple[Any, Any]:
    """An edge from each hub to the sink vertex carrying the share of its mass it must not
    pass on: those edges, and the weights with theirs appended."""
    import numpy as np

    n = len(graph)
    degree = np.fromiter(map(graph.degree.__getitem__, graph.nodes), dtype=float, count=n)
    out_total = np.bincount(np.concatenate([lower, higher]), weights=weights, minlength=n)
    hubs = np.nonzero((degree > hub_threshold) & (out_total > 0))[0]
    sinks = np.stack([hubs, np.full(len(hubs), n, dtype=hubs.dtype)], 1)
    return sinks, np.concatenate([weights, out_total[hubs] * (degree[hubs] / hub_threshold - 1)])


def personalized_pagerank(
    graph: LocalGraph,
    reset: Mapping[int, float],
    *,
    type_weights: Mapping[str, float],
    damping: float = 0.85,
    hub_threshold: int = 0,
    into: Mapping[int, float] | None = None,
) -> dict[int, float]:
    """PageRank of every node of the graph, teleporting by `reset` (node id -> weight).

    Mass that reaches a vertex with no way on (or a hub's sink) restarts from the reset
    distribution. Returns node id -> probability (summing to 1); an empty or all-zero reset
    gives an empty result.
    """
    import numpy as np

    vector = np.zeros(len(graph) + 1)
    for node, weight in reset.items():
        if node in graph.index and weight > 0:
            vector[graph.index[node]] = weight
    if not vector.any():
        return {}
    edges, weights = walk(graph, type_weights, hub_threshold, into)
    if not (weights > 0).any():
        # No edge can carry mass (none, or every weight 0): it all stays at the reset
        # nodes. (igraph would read all-zero weights as no weights, i.e. all 1.)
        vector = vector[:-1] / vector.sum()
        return dict(zip(graph.nodes, vector.tolist(), strict=True))
    scores = _power_iteration(edges.astype(np.int64), weights.astype(float), vector, damping)
    # Seen only on the real vertices, the walk is the one where a hub's excess restarts at
    # once; renormalising without the sink gives exactly that walk's distribution.
    real = scores[:-1].clip(0)
    real /= real.sum() or 1.0
    return dict(zip(graph.nodes, real.tolist(), strict=True))


def _power_iteration(edges: Any, weights: Any, reset: Any, damping: float) -> Any:
    """Weighted PageRank teleporting to `reset`, by power iteration to a 1e-12 step.

    Each vertex passes `damping` of its mass along its out-edges in proportion to their
    weights; mass at a vertex without out-weight, and the rest, restart from `reset` (igraph's
    semantics with u = v = reset). igraph's PRPACK solver does the same but picks a dense
    Gaussian elimination for graphs of a few thousand vertices (0.2 s at 1,200 vertices);
    this costs O(edges) per step, a few milliseconds for a query's subgraph.
    """
    import numpy as np

    n = len(reset)
    src, dst = edges[:, 0], edges[:, 1]
    out_weight = np.bincount(src, weights=weights, minlength=n)
    moving = out_weight > 0
    share = weights / np.where(moving, out_weight, 1.0)[src]
    teleport = reset / reset.sum()
    scores = teleport.copy()
    for _ in range(1000):
        flow = np.bincount(dst, weights=scores[src] * share, minlength=n)
        stuck = scores[~moving].sum()
        following = damping * flow + (1.0 - damping + damping * stuck) * teleport
        if np.abs(following - scores).sum() < 1e-12:
            return following
        scores = following
    return scores


def max_normalised(scores: Mapping[int, float]) -> dict[int, float]:
    """Scores divided by their maximum (all zero when nothing is positive)."""
    top = max(scores.values(), default=0.0)
    if top <= 0:
        return dict.fromkeys(scores, 0.0)
    return {node: value / top for node, value in scores.items()}


def write_graph(
    fmt: str,
    name: str,
    vertices: Sequence[Mapping[str, Any]],
    edges: Sequence[tuple[int, int]],
    edge_attrs: Sequence[Mapping[str, Any]],
) -> str:
    """A whole graph as text by igraph's own writer: `fmt` is "graphml" or "dot".

    `vertices[v]` holds vertex v's attributes and `edges[i]` joins two vertex indices,
    with `edge_attrs[i]`; `name` becomes the graph's `name` attribute."""
    import tempfile
    from pathlib import Path

    import igraph

    graph = igraph.Graph(n=len(vertices), edges=list(edges), directed=True)
    graph["name"] = name
    for seq, rows in ((graph.vs, vertices), (graph.es, edge_attrs)):
        for key in dict.fromkeys(k for row in rows for k in row):
            seq[key] = [row.get(key) for row in rows]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"graph.{fmt}"
        getattr(graph, f"write_{fmt}")(str(path))
        return path.read_text(encoding="utf-8")


def layout(
    count: int, edges: Sequence[tuple[int, int]], centre: int = 0
) -> list[tuple[float, float]]:
    """Positions in [0, 1]² of `count` vertices joined by `edges` (vertex indices), for
    drawing a small graph: igraph's Kamada-Kawai from a circle, so the same graph is
    always drawn the same way; `centre` is placed in the middle."""
    import igraph

    if count == 1:
        return [(0.5, 0.5)]
    graph = igraph.Graph(n=count, edges=list(edges))
    coords = graph.layout_kamada_kawai().coords
    cx, cy = coords[centre]
    shifted = [(x - cx, y - cy) for x, y in coords]
    reach = max((max(abs(x), abs(y)) for x, y in shifted), default=1.0) or 1.0
    return [(0.5 + 0.5 * x / reach, 0.5 + 0.5 * y / reach) for x, y in shifted]
