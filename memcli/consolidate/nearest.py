"""Nearest memories for the stages that compare new memories with stored ones."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcli.consolidate.job import Job


def similar(
    job: Job,
    vector: Any,
    text: str,
    kinds: Sequence[str],
    limit: int,
    *,
    exclude: Iterable[int] = (),
    before: int | None = None,
) -> list[int]:
    """Ids of the nodes of `kinds` nearest to a vector (full-text match on `text` when there
    is no vector), best first, skipping `exclude` and, with `before`, anything not older."""
    if limit <= 0:
        return []
    skip = set(exclude)
    wanted = limit * 4 + len(skip)
    if vector is not None:
        found = job.store.vector_search(job.space, vector, wanted, kinds)
    else:
        found = job.store.text_search(job.space, text, wanted, kinds)
    out = [i for i, _ in found if i not in skip and (before is None or i < before)]
    return out[:limit]


def mean_vector(vectors: Sequence[Any]) -> Any:
    """The normalised mean of vectors, or None when there are none."""
    import numpy as np

    if not vectors:
        return None
    centre = np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(centre))
    return centre / norm if norm else None
