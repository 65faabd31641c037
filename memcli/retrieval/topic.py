"""Topic context: a turn read together with the topic segment it belongs to.

A single turn is often too short to match a question on its own ("Yes, last weekend!"),
while the segment it belongs to (GAM's topic node, MemORAI's segment) says what was being
talked about. A turn's score therefore gains `topic_weight` times its segment's fused
similarity to the question, relative to the best segment's. A fact or reflection takes the
best segment among those of the turns it was derived from, so every kind of memory is
scored on the same footing; a memory outside any segment gets nothing, and a store without
segments (nothing consolidated yet) is scored exactly as before.

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
    """The query's similarity to topic segments, and the segments each memory rests on."""

    weight: float = 0.0
    segments: Similarity | None = None
    best: float = 0.0  # the best candidate segment's similarity: the scale of the bonus
    segments_of: dict[int, list[int]] = field(default_factory=dict)  # [] outside any

    @classmethod
    def within(cls, sim: Similarity, weight: float) -> TopicContext:
        """Topic context from segments already scored in `sim` (on its scale); inactive
        when it scored none."""
        best = max((s for i, s in sim.scores.items() if sim.kinds.get(i) == "segment"),
                   default=0.0)  # fmt: skip
        return cls(weight, sim, best) if weight > 0 and best > 0 else cls()

    def _locate(self, ctx: SearchContext, node_ids: Sequence[int]) -> dict[int, list[int]]:
        unknown = [i for i in node_ids if i not in self.segments_of]
        if unknown:
            found = ctx.store.segments_of(unknown)
            for node in unknown:
                self.segments_of[node] = found.get(node, [])
        return {i: self.segments_of[i] for i in node_ids if self.segments_of[i]}

    def bonus(self, ctx: SearchContext, node_ids: Iterable[int]) -> dict[int, float]:
        """weight × the best similarity among the node's segments / the best segment's
        (absent for a node outside any segment)."""
        if self.segments is None:
            return {}
        inside = self._locate(ctx, list(node_ids))
        scores = self.segments.scores
        self.segments.extend(ctx, {s for segs in inside.values() for s in segs})
        return {i: self._scaled(max(scores[s] for s in segs)) for i, segs in inside.items()}

    def bound(self, ctx: SearchContext, node_ids: Iterable[int]) -> dict[int, float]:
        """An upper bound of `bonus` for each node, reading no vector."""
        if self.segments is None:
            return {}
        inside = self._locate(ctx, list(node_ids))
        bound = self.segments.bound
        return {i: self._scaled(max(bound(s) for s in segs)) for i, segs in inside.items()}

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
    return memories, TopicContext.within(segments, weight)
