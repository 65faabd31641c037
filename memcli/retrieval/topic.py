"""Topic context: a turn read together with the topic segment it belongs to.

A single turn is often too short to match a question on its own ("Yes, last weekend!"),
while the segment it belongs to (GAM's topic node, MemORAI's segment) says what was being
talked about. A turn's score therefore gains `topic_weight` times its segment's fused
similarity to the question, relative to the best segment's. Facts and reflections are
written to stand alone and get no bonus; a store without segments (nothing consolidated
yet) is scored exactly as before.

Segments are ranked in the same full-text and vector queries as the memories
(`fused_each`), so the topic step adds no scan of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memcli.retrieval import SearchContext
from memcli.retrieval.fusion import Similarity, fused_each, fused_groups

SEGMENT = ("segment",)


@dataclass
class TopicContext:
    """The query's similarity to topic segments, and the segment each turn belongs to."""

    weight: float = 0.0
    segments: Similarity | None = None
    best: float = 0.0  # the best candidate segment's similarity: the scale of the bonus
    segment_of: dict[int, int | None] = field(default_factory=dict)

    def _locate(self, ctx: SearchContext, node_ids: Sequence[int]) -> dict[int, int]:
        unknown = [i for i in node_ids if i not in self.segment_of]
        if unknown:
            found = ctx.store.targets(unknown, "PART_OF")
            for node in unknown:
                self.segment_of[node] = found[node][0] if node in found else None
        return {i: s for i in node_ids if (s := self.segment_of[i]) is not None}

    def bonus(self, ctx: SearchContext, node_ids: Iterable[int]) -> dict[int, float]:
        """weight × the node's segment similarity / the best segment's (absent outside one)."""
        if self.segments is None:
            return {}
        inside = self._locate(ctx, list(node_ids))
        self.segments.extend(ctx, set(inside.values()))
        return {i: self._scaled(self.segments.scores[s]) for i, s in inside.items()}

    def bound(self, ctx: SearchContext, node_ids: Iterable[int]) -> dict[int, float]:
        """An upper bound of `bonus` for each node, reading no vector."""
        if self.segments is None:
            return {}
        inside = self._locate(ctx, list(node_ids))
        return {i: self._scaled(self.segments.bound(s)) for i, s in inside.items()}

    def _scaled(self, similarity: float) -> float:
        return self.weight * max(similarity, 0.0) / self.best


def memories_in_topics(
    ctx: SearchContext, query: str, kinds: Sequence[str], pool: int
) -> tuple[Similarity, TopicContext]:
    """Fused similarity of memories of `kinds`, and the topic context to add to it.

    The context is inactive (no bonus) when `topic_weight` is 0 or the space has no segment.
    """
    weight = ctx.cfg.topic_weight
    if weight <= 0 or not ctx.store.kinds_present(ctx.space, SEGMENT):
        return fused_groups(ctx, query, [(kinds, pool)]), TopicContext()
    memories, segments = fused_each(ctx, query, [(kinds, pool), (SEGMENT, pool)])
    best = max(segments.scores.values(), default=0.0)
    if best <= 0:
        return memories, TopicContext()
    return memories, TopicContext(weight, segments, best)
