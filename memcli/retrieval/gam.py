"""`gam` (GAM): top-down retrieval from topic anchors, reranked by multiplicative cues.

1. Anchors: the topic segments most similar to the question, plus their RELATED neighbours.
2. Drill-down: the turns PART_OF those segments (and the facts DERIVED_FROM those turns)
   become the candidates, next to the best direct matches among memories.
3. Rerank: (similarity + topic bonus) × β_time^time × β_role^role × β_conf^conf, where the
   similarity is max-normalised, the topic bonus is that of memcli.retrieval.topic (the
   memory's segment's similarity, scaled by `topic_weight`), and each cue (time, role,
   confidence: memcli.retrieval.cues) is 0 or 1.
A store without segments (only episodes) skips steps 1-2 and reranks the direct matches.
"""

from __future__ import annotations

from collections.abc import Sequence

from memcli.models import Hit, Node
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.cues import Cues
from memcli.retrieval.fusion import Similarity, fused_groups, inherit_replies, ranked, top
from memcli.retrieval.topic import TopicContext


def anchors(ctx: SearchContext, sim: Similarity) -> list[int]:
    """The best-matching topic segments plus the segments RELATED to them."""
    topics = {i: s for i, s in sim.scores.items() if sim.kinds.get(i) == "segment"}
    best = [i for i, _ in top(topics, ctx.cfg.gam_anchors)]
    if not best:
        return []
    related = ctx.store.edge_rows(best, ["RELATED"])
    return list(dict.fromkeys([*best, *(n for e in related for n in e[:2])]))


def drill_down(ctx: SearchContext, segments: Sequence[int]) -> list[int]:
    """Turns PART_OF the segments, and facts DERIVED_FROM those turns."""
    if not segments:
        return []
    inside = set(segments)
    turns = [src for src, dst, _, _ in ctx.store.edge_rows(segments, ["PART_OF"]) if dst in inside]
    found = set(turns)
    facts = [src for src, dst, _, _ in ctx.store.edge_rows(turns, ["DERIVED_FROM"]) if dst in found]
    return list(dict.fromkeys([*turns, *facts]))


def normalised(sim: Similarity, nodes: dict[int, Node]) -> dict[int, float]:
    """The memories' similarities divided by the best of them (negatives count 0)."""
    scores = {i: max(sim.scores.get(i, 0.0), 0.0) for i, n in nodes.items()
              if n.kind in MEMORY_KINDS}  # fmt: skip
    best = max(scores.values(), default=0.0)
    return {i: s / best for i, s in scores.items()} if best > 0 else scores


def rerank(
    ctx: SearchContext, query: str, scores: dict[int, float], nodes: dict[int, Node]
) -> dict[int, float]:
    """Each memory's score × β per cue that fires.

    People are the speakers of these memories and the entities the search met; the
    question names them or not.
    """
    cfg = ctx.cfg
    cues = Cues.of(
        query, nodes.values(), beta_time=cfg.beta_time, beta_role=cfg.beta_role,
        beta_conf=cfg.gam_beta_conf, min_belief=cfg.gam_min_belief,
    )  # fmt: skip
    return {i: score * cues.factor(nodes[i]) for i, score in scores.items()}


@register_retriever("gam")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Memories under the best topics, reranked by time, role and confidence cues."""
    cfg = ctx.cfg
    pools = [
        (MEMORY_KINDS, max(cfg.candidates, k)),
        (("segment",), cfg.gam_anchors),
        (("entity",), cfg.gam_anchors),
    ]
    sim = fused_groups(ctx, query, pools)
    inherit_replies(ctx, sim, cfg.seeds, cfg.reply_share, cfg.replied_share)
    below = drill_down(ctx, anchors(ctx, sim))
    sim.extend(ctx, below)
    nodes = ctx.store.nodes_by_ids([*sim.scores, *below])
    scores = normalised(sim, nodes)
    for i, extra in TopicContext.within(sim, cfg.topic_weight).bonus(ctx, dict(scores)).items():
        scores[i] += extra
    return ctx.hits(ranked(rerank(ctx, query, scores, nodes)), k)
