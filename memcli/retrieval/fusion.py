"""Combining ranked lists from several signals."""

from __future__ import annotations

from collections.abc import Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[tuple[int, float]]],
    constant: int = 60,
    weights: Sequence[float] | None = None,
) -> list[tuple[int, float]]:
    """Score each id by sum(weight / (constant + rank)) over the lists; best first."""
    weights = weights or [1.0] * len(rankings)
    scores: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, (node_id, _) in enumerate(ranking, start=1):
            scores[node_id] = scores.get(node_id, 0.0) + weight / (constant + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
