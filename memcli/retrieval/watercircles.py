"""`watercircles`: PersonalAI's WaterCircles over the knowledge graph (memcli.retrieval.kg).

Rings spread from every starting vertex at once, one hop per round, for `expand_depth`
rounds (breadth-first). A memory that rings from two or more starts reach lies where the
question's parts meet: those form the primary list, ranked by how many starts reach them
(then by relevance), and the best `wc_chain_num` are kept. Every other memory a ring
touched is on the secondary list, ranked by relevance, and the best `wc_other_num` are
kept. Credit: a primary memory's share of the most starts that meet anywhere; a secondary
memory counts as reached by one start.
"""

from __future__ import annotations

from memcli.retrieval import MEMORY_KINDS, SearchContext
from memcli.retrieval.kg import KnowledgeGraph, register_traversal
from memcli.retrieval.params import KgParams


def rings(kg: KnowledgeGraph, depth: int) -> dict[int, set[int]]:
    """node -> the starts whose rings reached it within `depth` hops."""
    reached: dict[int, set[int]] = {}
    for start in kg.starts:
        seen = {start}
        frontier = [start]
        for _ in range(depth):
            frontier = [n for node in frontier for n in kg.neighbours(node) if n not in seen]
            seen.update(frontier)
        for node in seen:
            reached.setdefault(node, set()).add(start)
    return reached


def circle_credit(kg: KnowledgeGraph, depth: int, chain: int, other: int) -> dict[int, float]:
    """Credit of the kept primary (where rings meet) and secondary memories."""
    reached = rings(kg, depth)
    kinds = kg.kinds
    memories = {n: len(s) for n, s in reached.items() if kinds.get(n) in MEMORY_KINDS}
    order = sorted(memories, key=lambda n: (-memories[n], -kg.rel(n), n))
    primary = [n for n in order if memories[n] >= 2][:chain]
    rest = sorted((n for n in memories if memories[n] < 2), key=lambda n: (-kg.rel(n), n))
    most = max((memories[n] for n in primary), default=1)
    credit = {n: memories[n] / most for n in primary}
    credit.update({n: 1.0 / most for n in rest[:other]})
    return credit


def credit(ctx: SearchContext, params: KgParams, kg: KnowledgeGraph) -> dict[int, float]:
    """Memories where rings from the question's entities and best memories meet."""
    return circle_credit(kg, params.expand_depth, params.wc_chain_num, params.wc_other_num)


register_traversal("watercircles", credit)
