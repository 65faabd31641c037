"""Reranks of the default's pool judged offline: maximal marginal relevance, and turns
taken in turn from each speaker a question names.

    .venv/bin/python -m tests.bench.rank_rerank .bench/pools.npz
    .venv/bin/python -m tests.bench.rank_rerank .bench/wide.npz --pools   # dumped with
        # tests.bench.rank_dump --tune candidates=150

Reads what tests/bench/rank_dump.py saved and the cached stores it was dumped from (for
the memories' vectors and speakers). The pool is ranked by the weights in code
(each signal's declared weight, memcli.retrieval.signals.SIGNALS), then

- MMR (Carbonell and Goldstein): the next memory taken is the one whose score (0-1 over
  the pool) minus lambda x its largest cosine with a memory already taken is highest, for
  lambda in LAMBDAS; lambda is chosen on two genres and reported on the third;
- two speakers: when the question names two or more speakers (every candidate has the
  role signal) the ranking alternates between their memories, best first.

Printed: recall@10 per genre for each lambda, the held-out choice with its 95% paired
bootstrap band against the ranking as it is, and the same for the speaker alternation.

--pools instead narrows a wide dump to the pools POOLS name (the first: today's 50 best by
BM25 and by cosine; then wider ones, some only for memories of a speaker the question
names), fits the weights leave one genre out on each, and prints the share of gold in the
pool and the held-out recall@10 against today's pool.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memcli.config import Config
from memcli.eval.bootstrap import paired_bootstrap
from memcli.eval.store_cache import built_store, code_hash
from memcli.memory import Memory
from memcli.retrieval.signals import SIGNALS
from tests.bench.genres import CACHE, DATA, GENRES, load_genre
from tests.bench.rank_compare import chosen_on_others, held_out
from tests.bench.rank_dump import load
from tests.bench.rank_fit import Question, band_of

LAMBDAS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
DEPTH = 40  # memories of the ranking an MMR pass reads


def recall(refs: Sequence[str], gold: Sequence[str], k: int = 10) -> float:
    """recall@k (points) of refs in this order, deduplicated, as memcli eval scores it."""
    seen = list(dict.fromkeys(r for r in refs if r))
    return 100 * len(set(gold) & set(seen[:k])) / len(set(gold)) if gold else 0.0


def mmr(score: np.ndarray, sim: np.ndarray, lam: float, k: int = 20) -> list[int]:
    """Rows in MMR order (the first k)."""
    chosen: list[int] = []
    left = list(range(len(score)))
    while left and len(chosen) < k:
        penalty = sim[np.ix_(left, chosen)].max(axis=1) if chosen else np.zeros(len(left))
        pick = left[int(np.argmax(score[left] - lam * penalty))]
        chosen.append(pick)
        left.remove(pick)
    return chosen


def alternate(order: list[int], speakers: list[str], named: list[str]) -> list[int]:
    """`order` taken in turn from each named speaker's memories, the others after."""
    lists = [[i for i in order if speakers[i] == p] for p in named]
    lists.append([i for i in order if speakers[i] not in named])
    out: list[int] = []
    for row in range(len(order)):
        out += [one[row] for one in lists if row < len(one)]
    return out


def stores(found: dict[str, Any]) -> dict[tuple[str, str], Memory]:
    """The cached store of every dumped conversation (as rank_dump built them)."""
    cfg, code = Config(), code_hash()
    wanted = {(q["genre"], q["conversation"]) for q in found["questions"]}
    out = {}
    for name in dict.fromkeys(g for g, _ in wanted):
        for conv in load_genre(name, str(DATA / GENRES[name])).bench.conversations:
            if (name, conv.name) in wanted:
                db, _ = built_store(conv, cfg, CACHE / name, {}, code=code)
                out[name, conv.name] = Memory(dataclasses.replace(cfg, db=str(db), space="default"))
    return out


def run(found: dict[str, Any]) -> list[str]:
    weights = np.array([s.weight for s in SIGNALS.values()])
    mems = stores(found)
    by_lam: dict[float, dict[str, list[float]]] = {lam: {} for lam in LAMBDAS}
    pairs: dict[str, tuple[list[float], list[float]]] = {}
    fired: dict[str, int] = {}
    for q in found["questions"]:
        g, x, ids = q["genre"], np.asarray(q["x"])[:, : len(SIGNALS)], list(map(int, q["ids"]))
        score = x @ weights
        order = [int(n) for n in np.lexsort((q["ids"], -score))]
        store = mems[g, q["conversation"]].store
        top = order[:DEPTH]
        vectors = store.get_vectors([ids[n] for n in top])
        matrix = np.array([vectors.get(ids[n], np.zeros(1)) for n in top])
        sim = matrix @ matrix.T if matrix.ndim == 2 else np.zeros((len(top), len(top)))
        rel = score[top]
        rel = (rel - rel.min()) / ((rel.max() - rel.min()) or 1.0)
        for lam in LAMBDAS:
            picked = [top[n] for n in mmr(rel, sim, lam)]
            by_lam[lam].setdefault(g, []).append(recall([q["refs"][n] for n in picked], q["gold"]))
        nodes = store.nodes_by_ids(ids)
        speakers = [(nodes[i].speaker or "") if i in nodes else "" for i in ids]
        role = x[:, list(SIGNALS).index("role")]
        named = sorted({speakers[n] for n in range(len(ids)) if role[n] > 0})
        base = recall([q["refs"][n] for n in order], q["gold"])
        new = base
        if len(named) >= 2 and role.mean() > 0.9:
            fired[g] = fired.get(g, 0) + 1
            new = recall([q["refs"][n] for n in alternate(order, speakers, named)], q["gold"])
        pairs.setdefault(g, ([], []))
        pairs[g][0].append(new)
        pairs[g][1].append(base)
    genres = list(pairs)
    lines = chosen_on_others(by_lam, "MMR lambda")
    bands = paired_bootstrap(pairs)
    lines += [f"two speakers {g}: fires on {fired.get(g, 0)}, {band_of(bands.groups[g])}"
              for g in genres]  # fmt: skip
    for mem in mems.values():
        mem.close()
    return lines


Rule = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]  # ranks, ranks, role
POOLS: dict[str, Rule] = {
    "50 by each": lambda lex, cos, role: (lex < 50) | (cos < 50),
    "+ named speaker's in 100": lambda lex, cos, role: (
        (lex < 50) | (cos < 50) | (role & ((lex < 100) | (cos < 100)))
    ),
    "+ named speaker's in 150": lambda lex, cos, role: (
        (lex < 50) | (cos < 50) | (role & ((lex < 150) | (cos < 150)))
    ),
    "100 by each": lambda lex, cos, role: (lex < 100) | (cos < 100),
    "150 by each": lambda lex, cos, role: (lex < 150) | (cos < 150),
}


def pools(found: dict[str, Any]) -> list[str]:
    """Each of POOLS: gold in the pool, held-out recall@10 against the first."""
    lines, base = [], None
    for name, rule in POOLS.items():
        qs = []
        for q in found["questions"]:
            x = np.asarray(q["x"], dtype=float)[:, : len(SIGNALS)]
            role = x[:, list(SIGNALS).index("role")] > 0
            keep = rule(np.array(q["lex_rank"]), np.array(q["cos_rank"]), role)
            refs = [r for r, k in zip(q["refs"], keep, strict=True) if k]
            gold = set(q["gold"])
            positive = np.array([r in gold for r in refs], dtype=bool)
            qs.append(Question(q["genre"], x[keep], np.asarray(q["ids"])[keep], refs, gold,
                               positive))  # fmt: skip
        got = held_out(qs)
        base = base or got
        share = {g: 100 * np.mean([len(q.gold & set(q.refs)) / len(q.gold) for q in qs
                                   if q.genre == g and q.gold]) for g in got}  # fmt: skip
        bands = paired_bootstrap({g: (got[g], base[g]) for g in got})
        lines.append(f"{name}: gold in pool " + " ".join(f"{g} {v:.1f}" for g, v in share.items())
                     + " | held out " + " ".join(f"{g} {np.mean(v):.1f}" for g, v in got.items())
                     + f" | macro {band_of(bands.macro)}")  # fmt: skip
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pools", type=Path)
    parser.add_argument("--pools", dest="wide", action="store_true", help="see the module")
    args = parser.parse_args(argv)
    found = load(args.pools)
    print("\n".join(pools(found) if args.wide else run(found)))


if __name__ == "__main__":
    main()
