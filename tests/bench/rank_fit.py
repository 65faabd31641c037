"""Fit the default's weights on dumped candidate pools, and judge them leave one genre out.

    .venv/bin/python -m tests.bench.rank_fit .bench/pools.npz [--signals fulltext,vector,...]
        [--l2 0.01] [--at 10] [--ascent]

Reads what tests/bench/rank_dump.py saved (every question's candidates, their signals and
which are gold evidence) and fits a linear score w · signals by a listwise logistic model:
per question, the softmax over its candidates of w · x, fitted to put its mass on the gold
candidates (the mean log-probability of each gold candidate), plus l2 · |w|² on
standardised signals. The loss is convex with one unknown per signal, so Newton's method
(with step halving) finds its minimum in a few steps. Each question weighs 1 / (its
genre's questions): each genre counts alike, as in the macro mean the default is judged
by. `--ascent` then refines w by coordinate ascent on recall@k itself (Metzler and Croft's
method for linear rankers), for comparison: it gains in sample and loses out of genre.
`--against OTHER.npz` takes the base column (the weights in code) from other pools of the
same questions, e.g. stores built with another embedding model, so a refit on one model's
pools is judged against the default on the other's. `--ablate` leaves each signal out in
turn, fits again and reports the held-out genres' recall against the fit with every signal,
with bands.

Reported, recall@k per genre: the weights in code (each signal's declared weight,
memcli.retrieval.signals.SIGNALS), the fit on all three genres (in sample) and, for each
genre, the fit on the other two scored on it (leave one genre out), each with a 95% paired
bootstrap band against the weights in code; then the fitted weights, to write into the
declarations (scaled so the largest is 1; only ratios matter).
Recall is scored as `memcli eval` scores it: candidates ranked by score (ties by node id),
refs deduplicated, |gold ∩ first k| / |gold|; gold refs outside the pool count as misses.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memcli.eval.bootstrap import Band, paired_bootstrap
from memcli.retrieval.signals import SIGNALS
from tests.bench.rank_dump import load


@dataclass
class Question:
    """One question's pool: signals (rows), node ids, refs, gold."""

    genre: str
    x: np.ndarray
    ids: np.ndarray
    refs: list[str]
    gold: set[str]
    positive: np.ndarray  # rows whose ref is gold

    def recall(self, w: np.ndarray, k: int) -> float:
        """recall@k of the ranking by x @ w (ties by node id), as memcli eval scores it."""
        if not self.gold:
            return 0.0
        seen: list[str] = []
        for n in np.lexsort((self.ids, -(self.x @ w))):
            if self.refs[n] and self.refs[n] not in seen:
                seen.append(self.refs[n])
                if len(seen) == k:
                    break
        return len(self.gold & set(seen)) / len(self.gold)


def questions(path: Path, signals: Sequence[str]) -> list[Question]:
    """The dumped questions with the chosen signals as columns ("pagerank" if dumped)."""
    found = load(path)
    names = found["signals"]
    out = []
    for q in found["questions"]:
        x = np.asarray(q["x"], dtype=float)
        columns = [
            np.asarray(q["pagerank"], dtype=float) if s == "pagerank" else x[:, names.index(s)]
            for s in signals
        ]
        gold = set(q["gold"])
        positive = np.array([r in gold for r in q["refs"]], dtype=bool)
        matrix = np.stack(columns, axis=1)
        out.append(Question(q["genre"], matrix, np.asarray(q["ids"]), q["refs"], gold, positive))
    return out


def _question_weights(qs: Sequence[Question]) -> np.ndarray:
    sizes: dict[str, int] = {}
    for q in qs:
        sizes[q.genre] = sizes.get(q.genre, 0) + 1
    return np.array([1.0 / sizes[q.genre] for q in qs])


def fit_logit(qs: Sequence[Question], l2: float, iterations: int = 50) -> np.ndarray:
    """The listwise logistic fit (see the module), on the raw signals' scale."""
    used = [q for q in qs if q.positive.any()]
    weights = _question_weights(used)
    stacked = np.concatenate([q.x for q in used])
    mean, std = stacked.mean(axis=0), stacked.std(axis=0)
    std[std == 0] = 1.0
    xs = [(q.x - mean) / std for q in used]

    def loss(w: np.ndarray) -> float:
        total = l2 * float(w @ w)
        for x, q, qw in zip(xs, used, weights, strict=True):
            s = x @ w
            top = s.max()
            total += qw * (top + np.log(np.exp(s - top).sum()) - s[q.positive].mean())
        return total

    w = np.zeros(stacked.shape[1])
    current = loss(w)
    for _ in range(iterations):
        grad, hess = 2 * l2 * w, 2 * l2 * np.eye(len(w))
        for x, q, qw in zip(xs, used, weights, strict=True):
            p = np.exp(x @ w - (x @ w).max())
            p /= p.sum()
            expected = p @ x
            grad += qw * (expected - x[q.positive].mean(axis=0))
            centred = x - expected
            hess += qw * (centred.T * p) @ centred
        step, size = np.linalg.solve(hess, grad), 1.0
        while size > 1e-6 and loss(w - size * step) > current:
            size /= 2  # Newton's full step can overshoot far from the minimum
        w = w - size * step
        previous, current = current, loss(w)
        if previous - current < 1e-10:
            break
    return w / std  # the shift (mean) changes no ranking


def macro_recall(qs: Sequence[Question], w: np.ndarray, k: int) -> float:
    """The mean over genres of recall@k."""
    return float(np.mean([np.mean(v) for v in per_genre(qs, w, k).values()]))


def ascent(qs: Sequence[Question], w: np.ndarray, k: int, rounds: int = 3) -> np.ndarray:
    """Coordinate ascent on the macro recall@k from `w`: each weight in turn moved by
    ±25/50/100% of its size, the best move kept, until a round moves none."""
    w, best = w.copy(), macro_recall(qs, w, k)
    for _ in range(rounds):
        moved = False
        for d in range(len(w)):
            step = max(abs(w[d]), 0.05 * np.abs(w).max())
            for factor in (-1.0, -0.5, -0.25, 0.25, 0.5, 1.0):
                trial = w.copy()
                trial[d] += factor * step
                got = macro_recall(qs, trial, k)
                if got > best + 1e-9:
                    best, w, moved = got, trial, True
        if not moved:
            break
    return w


def per_genre(qs: Sequence[Question], w: np.ndarray, k: int) -> dict[str, list[float]]:
    """Recall@k (points) of every question, by genre."""
    by: dict[str, list[float]] = {}
    for q in qs:
        by.setdefault(q.genre, []).append(100 * q.recall(w, k))
    return by


def band(a: list[float], b: list[float]) -> str:
    """mean(a - b) with its 95% paired bootstrap interval; * when it excludes 0."""
    return band_of(paired_bootstrap({"g": (a, b)}).groups["g"])


def report(qs: list[Question], args: argparse.Namespace) -> list[str]:
    """The table of the module's docstring, and the fitted weights."""

    fit = _fitter(args)
    k, genres = args.at, list(dict.fromkeys(q.genre for q in qs))
    coded = np.array([SIGNALS[s].weight if s in SIGNALS else 0.0 for s in args.signals])
    base, w_all = per_genre(qs, coded, k), fit(qs)
    if args.against:
        other = questions(args.against, args.signals)
        if [(q.genre, q.gold) for q in other] != [(q.genre, q.gold) for q in qs]:
            raise SystemExit(f"{args.against} holds other questions than {args.pools}")
        base = per_genre(other, coded, k)
    inside = per_genre(qs, w_all, k)
    lines = ["| genre | weights in code | fitted on all | Δ | fitted on the others | Δ |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    means = []
    for g in genres:
        rest = [q for q in qs if q.genre != g]
        held = per_genre([q for q in qs if q.genre == g], fit(rest) if rest else w_all, k)[g]
        means.append((np.mean(base[g]), np.mean(inside[g]), np.mean(held)))
        cells = [f"{means[-1][0]:.1f}", f"{means[-1][1]:.1f}", band(inside[g], base[g]),
                 f"{means[-1][2]:.1f}", band(held, base[g])]  # fmt: skip
        lines.append(f"| {g} | " + " | ".join(cells) + " |")
    macro = np.mean(means, axis=0)
    lines.append(f"| macro | {macro[0]:.1f} | {macro[1]:.1f} | | {macro[2]:.1f} | |")
    pool = [
        np.mean([len(q.gold & set(q.refs)) / len(q.gold) for q in qs if q.genre == g and q.gold])
        for g in genres
    ]
    lines += ["", "gold in the pool at all: "
              + ", ".join(f"{g} {100 * v:.1f}" for g, v in zip(genres, pool, strict=True)),
              "", "fitted on all three genres (each @signal declaration's weight):"]  # fmt: skip
    scale = np.abs(w_all).max() or 1.0
    lines += [f"    {s}: weight={v / scale:.2f}" for s, v in zip(args.signals, w_all, strict=True)]
    return lines


def _fitter(args: argparse.Namespace) -> Callable[[Sequence[Question]], np.ndarray]:
    def fit(sub: Sequence[Question]) -> np.ndarray:
        w = fit_logit(sub, args.l2)
        return ascent(sub, w, args.at) if args.ascent else w

    return fit


def held_out(qs: list[Question], args: argparse.Namespace) -> dict[str, list[float]]:
    """Each genre's recall@k under the weights fitted on the other genres."""
    fit, genres = _fitter(args), list(dict.fromkeys(q.genre for q in qs))
    return {
        g: per_genre([q for q in qs if q.genre == g], fit([q for q in qs if q.genre != g]),
                     args.at)[g]
        for g in genres
    }  # fmt: skip


def ablation(path: Path, args: argparse.Namespace) -> list[str]:
    """Each signal left out, the weights fitted again: recall@k leave one genre out, and
    the difference from all signals with its band."""
    full = held_out(questions(path, args.signals), args)
    genres = list(full)
    lines = ["| signal left out | " + " | ".join(f"Δ {g} held out" for g in genres)
             + " | Δ macro |", "|---|" + "---|" * (len(genres) + 1)]  # fmt: skip
    for signal in args.signals:
        rest = [s for s in args.signals if s != signal]
        found = held_out(questions(path, rest), args)
        bands = paired_bootstrap({g: (found[g], full[g]) for g in genres})
        cells = [band_of(bands.groups[g]) for g in genres] + [band_of(bands.macro)]
        lines.append(f"| {signal} | " + " | ".join(cells) + " |")
    return lines


def band_of(found: Band) -> str:
    mark = " *" if found.excludes_zero else ""
    return f"{found.diff:+.1f} [{found.low:+.1f}, {found.high:+.1f}]{mark}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pools", type=Path)
    parser.add_argument("--signals", default=",".join(SIGNALS))
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--at", type=int, default=10)
    parser.add_argument("--ascent", action="store_true")
    parser.add_argument("--ablate", action="store_true", help="each signal left out, LOGO")
    parser.add_argument("--against", type=Path, help="pools whose weights in code are the base")
    args = parser.parse_args(argv)
    args.signals = [s for s in args.signals.split(",") if s]
    print("\n".join(report(questions(args.pools, args.signals), args)))
    if args.ablate:
        print("\n" + "\n".join(ablation(args.pools, args)))


if __name__ == "__main__":
    main()
