"""Candidate signal sets, and a session-diversity rerank, judged leave one genre out offline.

    .venv/bin/python -m tests.bench.rank_compare .bench/pools.npz \
        "fulltext;related;vector;reply;role" "fulltext;related;vector;reply;role;nbr" \
        "fulltext;related;mv=np.maximum(vector,ctxown);reply;role" [--diversity]

Reads what tests/bench/rank_dump.py saved (with --extra for the columns of tests/bench/
rank_extra.py). Each argument after the pools is a signal set, `;`-separated: a dumped
column by name, or NAME=EXPRESSION over the columns (numpy as `np`; `lexrank` and
`cosrank` are each memory's rank in the full-text and vector lists, 9999 outside them).
For each set, the weights are fitted by rank_fit's listwise logistic model on two genres
and scored on the third; printed: held-out recall@10 per genre and macro, each against
the first set with its 95% paired bootstrap band, the in-sample recall and the weights
(largest 1).

--diversity reranks each pool greedily by the weights in code (HybridParams), a
candidate's score (over the question's best) minus lambda x the picks already taken from
its session, for lambda in LAMBDAS; lambda is chosen on two genres and reported on the third.

--halves GENRE also shows each conversation of GENRE apart (its held-out difference and
band), for a component that fires on that genre alone: it must pay on both halves.
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
from tests.bench.rank_fit import Question, band_of, fit_logit, per_genre

LAMBDAS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.4)


def questions(found: dict[str, Any], spec: list[str]) -> list[Question]:
    """The dumped questions with the set's columns."""
    names, out = found["signals"], []
    for q in found["questions"]:
        x = np.asarray(q["x"], dtype=float)
        env: dict[str, Any] = {n: x[:, k] for k, n in enumerate(names)}
        env["np"] = np
        # the memory's rank in the full-text and vector lists (9999 when not in one)
        env["lexrank"] = np.asarray(q["lex_rank"], dtype=float)
        env["cosrank"] = np.asarray(q["cos_rank"], dtype=float)
        columns = [
            eval(s.split("=", 1)[1], {"__builtins__": {}}, env) if "=" in s else env[s]
            for s in spec
        ]
        gold = set(q["gold"])
        positive = np.array([r in gold for r in q["refs"]], dtype=bool)
        ids = np.asarray(q["ids"])
        out.append(Question(q["genre"], np.stack(columns, 1), ids, q["refs"], gold, positive))
    return out


def held_out(qs: list[Question], l2: float = 0.01) -> dict[str, list[float]]:
    """Each genre's recall@10 under the weights fitted on the other genres."""
    out: dict[str, list[float]] = {}
    for g in dict.fromkeys(q.genre for q in qs):
        w = fit_logit([q for q in qs if q.genre != g], l2)
        out[g] = per_genre([q for q in qs if q.genre == g], w, 10)[g]
    return out


def compare(found: dict[str, Any], specs: list[str], halves: str = "") -> list[str]:
    """One line per signal set against the first (with `halves`, a genre's conversations
    apart as well)."""
    base = held_out(questions(found, specs[0].split(";")))
    lines = ["base " + " ".join(f"{g} {np.mean(v):.1f}" for g, v in base.items())]
    for spec in specs[1:]:
        qs = questions(found, spec.split(";"))
        got, w = held_out(qs), fit_logit(qs, 0.01)
        inside = per_genre(qs, w, 10)
        bands = paired_bootstrap({g: (got[g], base[g]) for g in base})
        cells = [f"{g} {np.mean(got[g]):.1f} ({band_of(bands.groups[g])})" for g in base]
        lines.append(f"{spec}\n   held: " + " ".join(cells) + f" macro {band_of(bands.macro)}"
                     + " | in " + " ".join(f"{np.mean(v):.1f}" for v in inside.values())
                     + " | w=" + ",".join(f"{v:.2f}" for v in w / np.abs(w).max()))  # fmt: skip
        if halves in got:
            lines.append("   " + _halves(found, halves, got[halves], base[halves]))
    return lines


def _halves(found: dict[str, Any], genre: str, got: list[float], base: list[float]) -> str:
    """The difference on each conversation of `genre`, with its band."""
    convs = [q["conversation"] for q in found["questions"] if q["genre"] == genre]
    pairs = {c: ([g for g, k in zip(got, convs, strict=True) if k == c],
                 [b for b, k in zip(base, convs, strict=True) if k == c])
             for c in dict.fromkeys(convs)}  # fmt: skip
    bands = paired_bootstrap(pairs)
    return f"{genre} by conversation: " + " ".join(f"{c} {band_of(bands.groups[c])}" for c in pairs)


def diverse_recall(q: dict[str, Any], names: list[str], lam: float, k: int = 10) -> float:
    """recall@k (points) of the pool reranked with a session-diversity penalty."""
    x = np.asarray(q["x"], dtype=float)
    weights = HybridParams().weights()
    raw = x[:, [names.index(s) for s in SIGNALS]] @ np.array([weights[s] for s in SIGNALS])
    score = raw / (np.abs(raw).max() or 1.0)
    ids, sessions = np.asarray(q["ids"]), q["sessions"]
    left, taken, seen = list(np.lexsort((ids, -score))), dict[str, int](), list[str]()
    while left and len(seen) < k:
        best = max(left, key=lambda n: (score[n] - lam * taken.get(sessions[n], 0), -ids[n]))
        left.remove(best)
        taken[sessions[best]] = taken.get(sessions[best], 0) + 1
        if q["refs"][best] and q["refs"][best] not in seen:
            seen.append(q["refs"][best])
    gold = set(q["gold"])
    return 100 * len(gold & set(seen)) / len(gold) if gold else 0.0


def diversity(found: dict[str, Any]) -> list[str]:
    """Recall per lambda and genre, then lambda chosen on two genres, held out."""
    qs, names = found["questions"], found["signals"]
    genres = list(dict.fromkeys(q["genre"] for q in qs))
    got = {lam: {g: [diverse_recall(q, names, lam) for q in qs if q["genre"] == g]
                 for g in genres} for lam in LAMBDAS}  # fmt: skip
    return chosen_on_others(got, "lambda")


def chosen_on_others(got: dict[float, dict[str, list[float]]], name: str) -> list[str]:
    """Recall per setting (the first: off) and genre, then for each genre the setting that
    does best on the other genres, scored on it against the first setting."""
    settings = list(got)
    genres = list(got[settings[0]])
    lines = [f"{name} {v}: " + " ".join(f"{g} {np.mean(got[v][g]):.1f}" for g in genres)
             for v in settings]  # fmt: skip
    for g in genres:
        rest = [o for o in genres if o != g]
        best = max(settings, key=lambda v: np.mean([np.mean(got[v][o]) for o in rest]))
        band = paired_bootstrap({g: (got[best][g], got[settings[0]][g])}).groups[g]
        lines.append(f"held out {g}: {name} {best} chosen on the others, "
                     f"{np.mean(got[best][g]):.1f} ({band_of(band)} against "
                     f"{settings[0]})")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pools", type=Path)
    parser.add_argument("sets", nargs="*", default=[";".join(SIGNALS)])
    parser.add_argument("--diversity", action="store_true")
    parser.add_argument("--halves", default="", help="a genre whose conversations to show apart")
    args = parser.parse_args(argv)
    found = load(args.pools)
    print("\n".join(compare(found, args.sets, args.halves)))
    if args.diversity:
        print("\n".join(diversity(found)))


if __name__ == "__main__":
    main()
