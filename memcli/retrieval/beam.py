"""`beam`: PersonalAI's BeamSearch over the knowledge graph (memcli.retrieval.kg).

From each starting vertex, paths grow one edge at a time for at most `beam_max_depth`
steps; after each step only the `beam_max_paths` best paths stay. A path never visits a
node twice, and two paths of one start never step onto the same node. A path's relevance
is `beam_mean_alpha` × the mean relevance of its nodes plus the rest × the relevance of the
node it reached last, so a path keeps growing only through nodes that matter to the
question. Paths that could not grow further (ended) and those that reached the depth
limit (continuous) are ranked together ("mixed") and the best `beam_max_paths` of each
start are kept. A node's credit is the best relevance of a kept path through it, relative
to the best kept path.
"""

from __future__ import annotations

from dataclasses import dataclass

from memcli.retrieval import SearchContext
from memcli.retrieval.kg import KnowledgeGraph, register_traversal
from memcli.retrieval.params import KgParams


@dataclass(frozen=True)
class Path:
    nodes: tuple[int, ...]
    score: float


def _score(kg: KnowledgeGraph, nodes: tuple[int, ...], alpha: float) -> float:
    mean = sum(kg.rel(n) for n in nodes) / len(nodes)
    return alpha * mean + (1.0 - alpha) * kg.rel(nodes[-1])


def _grow(
    kg: KnowledgeGraph, beam: list[Path], width: int, alpha: float
) -> tuple[list[Path], list[Path]]:
    """One step: (the next beam, the paths that could not grow)."""
    ended: list[Path] = []
    grown: list[Path] = []
    for path in beam:
        steps = [n for n in kg.neighbours(path.nodes[-1]) if n not in path.nodes]
        if not steps:
            ended.append(path)
        grown += [Path((*path.nodes, n), _score(kg, (*path.nodes, n), alpha)) for n in steps]
    grown.sort(key=lambda p: (-p.score, p.nodes))
    taken: set[int] = set()
    kept: list[Path] = []
    for path in grown:  # distinct paths do not share the node they stepped onto
        if path.nodes[-1] in taken:
            continue
        taken.add(path.nodes[-1])
        kept.append(path)
        if len(kept) >= width:
            break
    return kept, ended


def paths_from(kg: KnowledgeGraph, start: int, depth: int, width: int, alpha: float) -> list[Path]:
    """The best `width` paths (ended and continuous, mixed) grown from one start."""
    beam = [Path((start,), kg.rel(start))]
    finished: list[Path] = []
    for _ in range(depth):
        beam, ended = _grow(kg, beam, width, alpha)
        finished += ended
        if not beam:
            break
    return sorted([*finished, *beam], key=lambda p: (-p.score, p.nodes))[:width]


def beam_credit(kg: KnowledgeGraph, depth: int, width: int, alpha: float) -> dict[int, float]:
    """Each node's best kept path relevance, relative to the best kept path."""
    credit: dict[int, float] = {}
    for start in kg.starts:
        for path in paths_from(kg, start, depth, width, alpha):
            for node in path.nodes:
                credit[node] = max(credit.get(node, 0.0), path.score)
    best = max(credit.values(), default=0.0)
    return {n: s / best for n, s in credit.items()} if best > 0 else {}


def credit(ctx: SearchContext, params: KgParams, kg: KnowledgeGraph) -> dict[int, float]:
    """Memories on the question's most relevant graph paths."""
    return beam_credit(kg, params.beam_max_depth, params.beam_max_paths, params.beam_mean_alpha)


register_traversal("beam", credit)
