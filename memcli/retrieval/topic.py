"""Topic context: a turn read together with the topic segment it belongs to.

A single turn is often too short to match a question on its own ("Yes, last weekend!"),
while the segment it belongs to (GAM's topic node, MemORAI's segment) says what was being
talked about. A turn's score therefore gains `topic_weight` times its segment's fused
similarity to the question, relative to the best segment's. A fact or reflection takes the
best segment among those of the turns it was derived from, so every kind of memory is
scored on the same footing. A memory outside any segment (the newest turns, still in an
open buffer) stands for its own topic: its own normalised similarity takes the segment's
place, so consolidating a store never pushes its unconsolidated turns down. A store without
any segment (nothing consolidated yet) is scored exactly as before.

Segments are ranked in the same full-text and vector queries as the memories
(`fused_each`), so the topic step adds no scan of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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

    def bonus(self, ctx: SearchContext, own: Mapping[int, float]) -> dict[int, float]:
        """weight × the best similarity among each node's segments / the best segment's;
        for a node outside any segment, weight × its own normalised similarity `own[node]`."""
        if self.segments is None:
            return {}
        inside = self._locate(ctx, list(own))
        scores = self.segments.scores
        self.segments.extend(ctx, {s for segs in inside.values() for s in segs})
        return {
            i: self._scaled(max(scores[s] for s in inside[i]) / self.best if i in inside else s)
            for i, s in own.items()
        }

    def bound(self, ctx: SearchContext, own: Mapping[int, float]) -> dict[int, float]:
        """An upper bound of `bonus`, reading no vector, given upper bounds of the nodes'
        own normalised similarities."""
        if self.segments is None:
            return {}
        inside = self._locate(ctx, list(own))
        bound = self.segments.bound
        return {
            i: self._scaled(max(bound(s) for s in inside[i]) / self.best if i in inside else s)
            for i, s in own.items()
        }

    def _scaled(self, relative: float) -> float:
        return self.weight * min(max(relative, 0.0), 1.0)


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
