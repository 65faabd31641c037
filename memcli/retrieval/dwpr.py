"""`dwpr` (MemORAI): Dynamic Weighted PageRank on a query-focused subgraph.

1. Multi-aspect seeds: the best matches among topic segments, among knowledge nodes
   (facts, reflections, entities, concepts) and among conversation turns, each aspect
   searched on its own so that no kind crowds out another.
2. The query-focused subgraph is the seeds plus their one-hop neighbours.
3. Query-conditioned edge weights: a step into a node weighs its edge-type weight times the
   node's similarity to the query. (MemORAI weighs a step by how well the node it leaves
   matches; with per-source normalisation that factor is the same on every edge leaving a
   node and cancels out, so here the node the walk enters carries it.)
4. PageRank whose teleport vector is every subgraph node's similarity to the query; memories
   are ranked by their final PageRank.
"""

from __future__ import annotations

from memcli.graph import expand, personalized_pagerank
from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.fusion import Similarity, fused_groups, inherit_replies, ranked, top

ASPECTS: tuple[tuple[str, ...], ...] = (
    ("segment",),
    ("fact", "reflection", "entity", "concept"),
    ("episode",),
)

# Smallest weight a step into a node gets, so a node the query does not match is still
# reachable (it may connect two that it does).
MIN_STEP = 0.01


def aspect_seeds(ctx: SearchContext, query: str) -> Similarity:
    """Fused similarity of the best `dwpr_seeds` nodes of each aspect present in the space."""
    present = ctx.store.kinds_present(ctx.space, [k for kinds in ASPECTS for k in kinds])
    groups = [(kinds, ctx.cfg.dwpr_seeds) for kinds in ASPECTS if present.intersection(kinds)]
    sim = fused_groups(ctx, query, groups or [(None, ctx.cfg.dwpr_seeds)])
    inherit_replies(ctx, sim, ctx.cfg.dwpr_seeds, ctx.cfg.reply_share, ctx.cfg.replied_share)
    return sim


@register_retriever("dwpr")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Memories ranked by PageRank with query-conditioned weights on a query-focused subgraph."""
    cfg = ctx.cfg
    sim = aspect_seeds(ctx, query)
    seeds = top(sim.scores, len(sim.scores))
    if not seeds:
        return []
    graph = expand(
        ctx.store,
        [i for i, _ in seeds],
        1,
        hub_threshold=cfg.hub_threshold,
        max_nodes=cfg.max_subgraph,
    )
    sim.extend(ctx, graph.nodes)
    relevance = {i: max(sim.scores.get(i, 0.0), 0.0) for i in graph.nodes}
    pr = personalized_pagerank(
        graph,
        relevance,
        type_weights=cfg.type_weights(),
        damping=cfg.dwpr_damping,
        hub_threshold=cfg.hub_threshold,
        into={i: max(s, MIN_STEP) for i, s in relevance.items()},
    )
    sim.kinds.update(ctx.store.kinds_of([n for n in pr if n not in sim.kinds]))
    memories = {i: s for i, s in pr.items() if sim.kinds.get(i) in MEMORY_KINDS and s > 0}
    return ctx.hits(ranked(memories), k)
