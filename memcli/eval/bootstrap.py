"""Noise bands: paired bootstrap intervals for a difference between two runs.

Two retrieval runs over the same questions differ question by question; whether their mean
difference is more than chance depends on how those per-question differences scatter. The
paired bootstrap resamples questions with replacement (the same question for both runs) and
reads the interval off the resampled mean differences (percentile method).

Questions are resampled within each group (a genre, a benchmark), so every group keeps its
size; the macro mean over groups (each group's mean difference weighing alike) takes its
interval from the same resamples: resample r of the macro mean is the mean over groups of
their resample r.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from memcli.errors import UsageError


@dataclass(frozen=True)
class Band:
    """An observed mean difference and its bootstrap interval, in the units given."""

    diff: float
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly above or wholly below 0 (more than noise)."""
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class Bands:
    """A band per group and one for the macro mean over the groups."""

    groups: dict[str, Band]
    macro: Band


Pairs = Mapping[str, tuple[Sequence[float], Sequence[float]]]


def paired_bootstrap(
    pairs: Pairs, *, resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> Bands:
    """Bands of mean(a - b) per group of `pairs` (group -> (a, b), the same questions in the
    same order) and of the macro mean over groups; seeded, so a rerun gives the same bands."""
    if not pairs:
        raise UsageError("nothing to compare", fix="give at least one group of paired values")
    if resamples < 1 or not 0 < level < 1:
        raise UsageError(f"need resamples >= 1 and 0 < level < 1, got {resamples}, {level}")
    rng = np.random.default_rng(seed)
    tail = 100 * (1 - level) / 2
    groups: dict[str, Band] = {}
    draws = []
    for name, (a, b) in pairs.items():
        diffs = _differences(name, a, b)
        picked = rng.integers(0, len(diffs), size=(resamples, len(diffs)))
        means = diffs[picked].mean(axis=1)
        draws.append(means)
        groups[name] = _band(float(diffs.mean()), means, tail)
    macro = np.mean(draws, axis=0)
    observed = float(np.mean([band.diff for band in groups.values()]))
    return Bands(groups, _band(observed, macro, tail))


def _differences(name: str, a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """a - b as an array; the two runs must have answered the same questions."""
    if len(a) != len(b) or not a:
        raise UsageError(
            f"{name}: {len(a)} values against {len(b)}; a paired comparison needs the same "
            "questions in both runs (and at least one)",
            fix="compare runs over the same data",
        )
    return np.asarray(a, dtype=float) - np.asarray(b, dtype=float)


def _band(observed: float, means: np.ndarray, tail: float) -> Band:
    low, high = np.percentile(means, [tail, 100 - tail])
    return Band(observed, float(low), float(high))
