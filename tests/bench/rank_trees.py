"""Gradient-boosted trees (LambdaMART) in place of the default's linear fit, leave one genre out.

    pip install lightgbm    # not a memcli dependency: only this comparison needs it
    .venv/bin/python -m tests.bench.rank_trees .bench/pools.npz \
        [--signals fulltext,related,...] [--rate 0.05,0.1] [--rounds 50,200] [--leaves 7]

Reads what tests/bench/rank_dump.py saved, fits lightgbm's lambdarank objective (a tree
ensemble trained on NDCG's pairwise gradients, truncated at the first 20) on two genres and
scores recall@10 on the third, as rank_fit scores the linear model (tests/bench/
rank_fit.py): a question whose pool holds no gold is left out of training, not of scoring.
Printed per setting: held-out recall per genre and the macro mean, beside the linear fit's.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from memcli.retrieval.signals import SIGNALS
from tests.bench.rank_fit import Question, fit_logit, questions


def _trees(train: list[Question], rate: float, rounds: int, leaves: int) -> object:
    import lightgbm  # type: ignore[import-not-found]

    used = [q for q in train if q.positive.any()]
    data = lightgbm.Dataset(
        np.concatenate([q.x for q in used]),
        np.concatenate([q.positive.astype(int) for q in used]),
        group=[len(q.positive) for q in used],
    )
    params = {
        "objective": "lambdarank", "learning_rate": rate, "num_leaves": leaves,
        "min_data_in_leaf": 50, "lambdarank_truncation_level": 20, "verbose": -1,
        "num_threads": 2, "seed": 0,
    }  # fmt: skip
    return lightgbm.train(params, data, num_boost_round=rounds)


def _recall(q: Question, scores: np.ndarray, k: int = 10) -> float:
    """recall@k of the ranking by `scores`, as Question.recall scores a linear one."""
    seen: list[str] = []
    for n in np.lexsort((q.ids, -scores)):
        if q.refs[n] and q.refs[n] not in seen:
            seen.append(q.refs[n])
            if len(seen) == k:
                break
    return len(q.gold & set(seen)) / len(q.gold) if q.gold else 0.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pools", type=Path)
    parser.add_argument("--signals", default=",".join(SIGNALS))
    parser.add_argument("--rate", default="0.05,0.1")
    parser.add_argument("--rounds", default="50,200")
    parser.add_argument("--leaves", type=int, default=7)
    args = parser.parse_args(argv)
    qs = questions(args.pools, [s for s in args.signals.split(",") if s])
    genres = list(dict.fromkeys(q.genre for q in qs))

    def held(score_of: object) -> list[float]:
        out = []
        for g in genres:
            model = score_of([q for q in qs if q.genre != g])  # type: ignore[operator]
            out.append(100 * float(np.mean([_recall(q, model(q)) for q in qs if q.genre == g])))
        return out

    def linear(train: list[Question]) -> object:
        w = fit_logit(train, 0.01)
        return lambda q: q.x @ w

    rows = [("linear (rank_fit)", held(linear))]
    for rate in map(float, args.rate.split(",")):
        for rounds in map(int, args.rounds.split(",")):

            def trees(train: list[Question], r: float = rate, n: int = rounds) -> object:
                model = _trees(train, r, n, args.leaves)
                return lambda q: model.predict(q.x)  # type: ignore[attr-defined]

            rows.append((f"trees, rate {rate}, {rounds} rounds", held(trees)))
    print("| model | " + " | ".join(genres) + " | macro |")
    print("|---|" + "---|" * (len(genres) + 1))
    for name, got in rows:
        print(f"| {name} | " + " | ".join(f"{v:.1f}" for v in got) + f" | {np.mean(got):.1f} |")


if __name__ == "__main__":
    main()
