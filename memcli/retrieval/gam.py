"""`gam` (GAM): top-down retrieval from topic anchors, reranked by multiplicative cues.

1. Anchors: the topic segments most similar to the question, plus their RELATED neighbours.
2. Drill-down: the turns PART_OF those segments (and the facts DERIVED_FROM those turns)
   become candidates, next to the best direct matches among memories.
3. Rerank: relevance × β_time^time × β_role^role × β_conf^conf, where relevance is the
   default's score relative to the best first candidate's (memcli.retrieval.relevance)
   and each cue (time, role, confidence: memcli.retrieval.cues) is 0 or 1.
A store without segments (only episodes) skips steps 1-2 and reranks the direct matches.
"""

from __future__ import annotations

from collections.abc import Sequence

from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.cues import Cues
from memcli.retrieval.firstpass import ranked
from memcli.retrieval.params import GamParams, HybridParams
from memcli.retrieval.relevance import Relevance

SEGMENT = ("segment",)


def anchors(ctx: SearchContext, found: Relevance, count: int) -> list[int]:
    """The best-matching topic segments plus the segments RELATED to them."""
    fp = found.fp
    topics = found.relative([i for i in fp.candidates if fp.kinds.get(i) == "segment"])
    best = [i for i, s in ranked(topics)[:count] if s > 0]
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


@register_retriever("gam", GamParams)
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Memories under the best topics, reranked by time, role and confidence cues."""
    params = ctx.params("gam", GamParams)
    size = max(ctx.params("hybrid", HybridParams).candidates, k)
    found = Relevance.of(ctx, query, size, extra=[(SEGMENT, params.anchors)])
    below = drill_down(ctx, anchors(ctx, found, params.anchors))
    relevance = found.relative([*found.scores, *below])
    nodes = ctx.store.nodes_by_ids(i for i in relevance if found.fp.kinds.get(i) in MEMORY_KINDS)
    cues = Cues.of(
        query, nodes.values(), beta_time=params.beta_time, beta_role=params.beta_role,
        beta_conf=params.beta_conf, min_belief=params.min_belief,
    ).naming(found.signals.people)  # fmt: skip
    return ctx.hits(ranked({i: relevance[i] * cues.factor(n) for i, n in nodes.items()}), k)
