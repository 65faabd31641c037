"""`dwpr` (MemORAI): Dynamic Weighted PageRank on a query-focused subgraph.

1. Multi-aspect seeds: the best matches among topic segments, among knowledge nodes
   (facts, reflections, entities, concepts) and among conversation turns, each aspect
   taken from the shared first pass on its own so that no kind crowds out another.
2. The query-focused subgraph is the seeds plus their one-hop neighbours.
3. Query-conditioned edge weights: a step into a node weighs its edge-type weight times the
   node's relevance to the query. (MemORAI weighs a step by how well the node it leaves
   matches; with per-source normalisation that factor is the same on every edge leaving a
   node and cancels out, so here the node the walk enters carries it.)
4. PageRank whose teleport vector is every subgraph node's relevance to the query; memories
   are ranked by their final PageRank.
Relevance is the default's score of a memory relative to the best first candidate's, and
another node's plain similarity (memcli.retrieval.relevance).
"""

from __future__ import annotations

from memcli.graph import expand, personalized_pagerank
from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.firstpass import ranked
from memcli.retrieval.params import DwprParams
from memcli.retrieval.relevance import Relevance

ASPECTS: tuple[tuple[str, ...], ...] = (
    ("segment",),
    ("fact", "reflection", "entity", "concept"),
    ("episode",),
)

# Smallest weight a step into a node gets, so a node the query does not match is still
# reachable (it may connect two that it does).
MIN_STEP = 0.01


def aspect_seeds(ctx: SearchContext, query: str, params: DwprParams) -> tuple[Relevance, list[int]]:
    """The first pass with every aspect's kinds, and the best `seeds` nodes of each aspect
    present in the space."""
    found = Relevance.of(
        ctx, query, params.seeds, extra=[(kinds, params.seeds) for kinds in ASPECTS]
    )
    fp = found.fp
    seeds: list[int] = []
    for kinds in ASPECTS:
        inside = found.relative([i for i in fp.candidates if fp.kinds.get(i) in kinds])
        seeds += [i for i, s in ranked(inside)[: params.seeds] if s > 0]
    return found, seeds


@register_retriever("dwpr", DwprParams)
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Memories ranked by PageRank with query-conditioned weights on a query-focused subgraph."""
    params = ctx.params("dwpr", DwprParams)
    found, seeds = aspect_seeds(ctx, query, params)
    if not seeds:
        return []
    graph = expand(ctx.store, seeds, 1, hub_threshold=params.hub_threshold,
                   max_nodes=params.max_subgraph)  # fmt: skip
    relevance = found.relative(graph.nodes)
    pr = personalized_pagerank(
        graph,
        relevance,
        type_weights=params.type_weights(),
        damping=params.damping,
        hub_threshold=params.hub_threshold,
        into={i: max(s, MIN_STEP) for i, s in relevance.items()},
    )
    kinds = found.fp.kinds
    memories = {i: s for i, s in pr.items() if kinds.get(i) in MEMORY_KINDS and s > 0}
    return ctx.hits(ranked(memories), k)
