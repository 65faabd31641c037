"""`astar`: PersonalAI's A* over the knowledge graph (memcli.retrieval.kg).

Between every two of the first `astar_endpoints` starting vertices, A* looks for a
shortest path: each edge costs one (the graph taken as unweighted and undirected) and the
heuristic from a node to the target is one minus the inner product of their embeddings
(PersonalAI's "ip" metric; a node without a vector counts as unrelated). A search gives up
beyond `astar_max_depth` edges or after expanding `astar_max_passed` nodes. What lies on
the paths found connects the question's parts; a node's credit is the number of paths
through it, relative to the node most paths pass.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

from memcli.retrieval import SearchContext
from memcli.retrieval.kg import KnowledgeGraph, register_traversal
from memcli.retrieval.params import KgParams


def _heuristic(vectors: dict[int, Any], node: int, target: int) -> float:
    a, b = vectors.get(node), vectors.get(target)
    return 1.0 if a is None or b is None else 1.0 - float(a @ b)


def shortest_path(
    kg: KnowledgeGraph, vectors: dict[int, Any], pair: tuple[int, int], limits: tuple[int, int]
) -> list[int] | None:
    """A* from pair[0] to pair[1] within (max depth, max expanded nodes), or None."""
    source, target = pair
    max_depth, max_passed = limits
    queue: list[tuple[float, int, int]] = [(_heuristic(vectors, source, target), 0, source)]
    came: dict[int, int | None] = {source: None}
    cost = {source: 0}
    passed = 0
    while queue and passed < max_passed:
        _, g, node = heapq.heappop(queue)
        if node == target:
            path = [node]
            while came[path[-1]] is not None:
                path.append(came[path[-1]])  # type: ignore[arg-type]
            return path[::-1]
        if g > cost.get(node, g) or g >= max_depth:
            continue
        passed += 1
        for n in sorted(kg.neighbours(node)):
            if g + 1 < cost.get(n, max_depth + 1):
                cost[n], came[n] = g + 1, node
                heapq.heappush(queue, (g + 1 + _heuristic(vectors, n, target), g + 1, n))
    return None


def path_credit(ctx: SearchContext, params: KgParams, kg: KnowledgeGraph) -> dict[int, float]:
    """Memories on the shortest paths between the question's entities and best memories
    (how many paths pass each node, relative to the most)."""
    ends = kg.starts[: params.astar_endpoints]
    vectors = ctx.store.get_vectors(list(kg.adjacent))
    passes: dict[int, int] = {}
    for pair in itertools.combinations(ends, 2):
        path = shortest_path(kg, vectors, pair, (params.astar_max_depth, params.astar_max_passed))
        for node in path or ():
            passes[node] = passes.get(node, 0) + 1
    most = max(passes.values(), default=0)
    return {n: c / most for n, c in passes.items()} if most else {}


register_traversal("astar", path_credit)
