"""Judge derived-memory signals offline, leave one genre out, on tests/bench/derived_dump.py pools.

    .venv/bin/python -m tests.bench.derived_fit .bench/derived.npz \
        "ROWS::SPEC" "ROWS::SPEC" ... [--types]

Each argument is a candidate: ROWS, an expression over the columns choosing the pool's rows
(`in_pool>0`: the default's own pool; `(in_pool>0)|(via_seg>0)`: with the members of the
best segments), then `::`, then SPEC, `;`-separated columns or NAME=EXPRESSION (numpy as
`np`; `old` is the default's score with the weights in code, so `old;seg_bm` fits only the
new signal's weight beside it and leaves the default's own ranking as it is). Weights are
fitted by rank_fit's listwise model on two genres and scored on the third; the first
candidate is the baseline every other is compared with (paired bands per genre, macro).
--types also shows each question type's held-out difference.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from memcli.eval.bootstrap import paired_bootstrap
from memcli.retrieval.params import HybridParams
from memcli.retrieval.signals import SIGNALS
from tests.bench.rank_dump import load
from tests.bench.rank_fit import Question, band_of, fit_logit

WATCH = {"multi-hop", "multi_hop", "summarization", "event_ordering", "multi_session_reasoning"}


def _env(q: dict[str, Any], names: list[str]) -> dict[str, Any]:
    x = np.asarray(q["x"], dtype=float)
    env: dict[str, Any] = {n: x[:, k] for k, n in enumerate(names)}
    weights = HybridParams().weights()
    env["old"] = sum(weights[s] * env[s] for s in SIGNALS)
    env["np"] = np
    env["lexrank"] = np.asarray(q["lex_rank"], dtype=float)
    env["cosrank"] = np.asarray(q["cos_rank"], dtype=float)
    return env


def _eval(expr: str, env: dict[str, Any]) -> Any:
    return eval(expr, {"__builtins__": {}}, env)  # a bench's own expressions


def questions(found: dict[str, Any], candidate: str) -> tuple[list[Question], list[str]]:
    """The questions' rows and columns for one candidate; and each question's type."""
    rows_expr, spec = candidate.split("::", 1) if "::" in candidate else ("in_pool>0", candidate)
    out, types = [], []
    for q in found["questions"]:
        env = _env(q, found["signals"])
        keep = np.asarray(_eval(rows_expr, env), dtype=bool)
        cols = [_eval(s.split("=", 1)[1], env) if "=" in s else env[s] for s in spec.split(";")]
        x = np.stack([np.broadcast_to(c, keep.shape) for c in cols], 1)[keep]
        refs = [r for r, k in zip(q["refs"], keep, strict=True) if k]
        gold = set(q["gold"])
        positive = np.array([r in gold for r in refs], dtype=bool)
        ids = np.asarray(q["ids"])[keep]
        out.append(Question(q["genre"], x, ids, refs, gold, positive))
        types.append(q["category"])
    return out, types


def held_out(qs: list[Question], l2: float) -> tuple[list[float], dict[str, np.ndarray]]:
    """Every question's recall@10 under the weights fitted without its genre."""
    recall = [0.0] * len(qs)
    weights = {}
    for g in dict.fromkeys(q.genre for q in qs):
        w = fit_logit([q for q in qs if q.genre != g], l2)
        weights[g] = w
        for n, q in enumerate(qs):
            if q.genre == g:
                recall[n] = 100 * q.recall(w, 10)
    return recall, weights


def report(found: dict[str, Any], candidates: list[str], args: argparse.Namespace) -> list[str]:
    base_qs, types = questions(found, candidates[0])
    genres = list(dict.fromkeys(q.genre for q in base_qs))
    base, _ = held_out(base_qs, args.l2)
    lines = []
    for candidate in candidates:
        qs, _ = questions(found, candidate)
        got, _ = held_out(qs, args.l2)
        inside = fit_logit(qs, args.l2)
        pairs = {
            g: (
                [got[n] for n, q in enumerate(qs) if q.genre == g],
                [base[n] for n, q in enumerate(qs) if q.genre == g],
            )
            for g in genres
        }
        bands = paired_bootstrap(pairs)
        cells = [f"{g} {np.mean(pairs[g][0]):.1f} ({band_of(bands.groups[g])})" for g in genres]
        oracle = np.mean([100 * len(q.gold & set(q.refs)) / max(1, len(q.gold)) for q in qs])
        lines.append(
            f"{candidate}\n    held out: {'; '.join(cells)}; macro {band_of(bands.macro)}"
            f"\n    gold in pool {oracle:.1f}; in-sample weights "
            f"{' '.join(f'{v:.3g}' for v in inside / np.abs(inside).max())}"
        )
        if args.types:
            lines.append("    " + _types(got, base, types, qs))
    return lines


def _types(got: list[float], base: list[float], types: list[str], qs: list[Question]) -> str:
    cells = []
    for label in dict.fromkeys(types):
        if label not in WATCH:
            continue
        picked = [n for n, t in enumerate(types) if t == label]
        a, b = [got[n] for n in picked], [base[n] for n in picked]
        band = paired_bootstrap({"t": (a, b)}).groups["t"]
        cells.append(
            f"{qs[picked[0]].genre}/{label} {np.mean(b):.1f}->{np.mean(a):.1f} ({band_of(band)})"
        )
    return "; ".join(cells)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pools", type=Path)
    parser.add_argument("candidates", nargs="+")
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--types", action="store_true")
    args = parser.parse_args(argv)
    print("\n".join(report(load(args.pools), args.candidates, args)))


if __name__ == "__main__":
    main()
