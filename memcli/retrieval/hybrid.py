"""`hybrid` (default, GAAMA): fused similarity plus Personalized PageRank on a local subgraph.

1. Candidates from full-text (BM25) and vector search, fused into one similarity; a turn
   that answers a candidate question inherits part of the question's similarity.
2. The best `seeds` candidates seed PageRank, weighted by similarity squared.
3. The seeds' neighbourhood to `expand_depth` hops is read from the store as a local graph.
4. PageRank with edge-type weights and hub dampening runs on that graph.
5. Score = similarity + ppr_weight·PageRank, both max-normalised (similarity by the best
   candidate's); a node found only through the graph gets its similarity computed on
   demand whenever it could still make the top k.
"""

from __future__ import annotations

from memcli.graph import expand, max_normalised, personalized_pagerank
from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.fusion import fused, inherit_replies, ranked, top


def graph_scores(ctx: SearchContext, query: str, pool: int, k: int) -> dict[int, float]:
    """Similarity + weighted PageRank of the memories the query reaches, exact for the top k."""
    cfg = ctx.cfg
    # Organisers (segments, concepts) are reached through the graph rather than seeded:
    # their summaries and labels would otherwise take candidate slots from memories.
    sim = fused(ctx, query, pool, MEMORY_KINDS)
    inherit_replies(ctx, sim, cfg.seeds, cfg.reply_share)
    seeds = top(sim.scores, cfg.seeds)
    if not seeds:
        return {}
    graph = expand(
        ctx.store,
        [i for i, _ in seeds],
        cfg.expand_depth,
        hub_threshold=cfg.hub_threshold,
        max_nodes=cfg.max_subgraph,
    )
    ppr = max_normalised(
        personalized_pagerank(
            graph,
            {i: s * s for i, s in seeds},
            type_weights=cfg.type_weights(),
            damping=cfg.damping,
            hub_threshold=cfg.hub_threshold,
        )
    )
    top_sim = max(max(sim.scores.values()), 1e-9)
    combined = {
        i: max(s, 0.0) / top_sim + cfg.ppr_weight * ppr.get(i, 0.0) for i, s in sim.scores.items()
    }
    sim.kinds.update(ctx.store.kinds_of([n for n in graph.nodes if n not in sim.kinds]))
    memories = {i: s for i, s in combined.items() if sim.kinds.get(i) in MEMORY_KINDS}
    # A node met only through the graph gets its similarity computed when, at its best
    # (its similarity's upper bound plus its PageRank), it could still enter the top k.
    ranks = sorted(memories.values(), reverse=True)
    floor = ranks[k - 1] if len(ranks) >= k else float("-inf")
    reachable = [
        n for n in graph.nodes
        if n not in sim.scores and sim.kinds.get(n) in MEMORY_KINDS
        and max(sim.bound(n), 0.0) / top_sim + cfg.ppr_weight * ppr.get(n, 0.0) >= floor
    ]  # fmt: skip
    for i, s in sim.extend(ctx, reachable).items():
        memories[i] = max(s, 0.0) / top_sim + cfg.ppr_weight * ppr.get(i, 0.0)
    return memories


@register_retriever("hybrid")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Memories ranked by fused similarity, nudged by PageRank from the best matches."""
    scores = graph_scores(ctx, query, max(ctx.cfg.candidates, k), k)
    return ctx.hits(ranked(scores), k)
