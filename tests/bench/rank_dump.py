"""Every question's candidate pool with its signals and gold labels, for fitting the default.

    nice -n 5 .venv/bin/python -m tests.bench.rank_dump --out .bench/pools.npz \
        [--genres locomo,beam,realtalk] [--cache DIR] [--pagerank] [--extra]
        [--tune candidates=150,...] [--embedding multilingual-e5-small]

For each question of the three dev genres (tests/bench/genres.py: the same data, the same
cached stores), the default's first pass and candidate pool (memcli.retrieval.firstpass,
memcli.retrieval.signals) are computed as `ask` computes them, and saved: one row per
candidate memory with every declared signal (memcli.retrieval.signals.SIGNALS, in their
order), whether its ref is gold, its rank in the full-text and vector lists. tests/bench/
rank_fit.py fits weights on the rows and scores recall@k offline, question by question, as
`memcli eval` scores it (gold refs the pool misses count as misses). With --pagerank, each
row also gets the default's former PageRank (seeds: the 40 best by plain similarity, 2
hops), to see whether it earns its cost. With --tune, the pools are those of `hybrid` under
other parameters (memcli.retrieval.params.HybridParams).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from memcli.config import Config
from memcli.eval.store_cache import built_store, code_hash
from memcli.memory import Memory
from memcli.retrieval import SearchContext
from memcli.retrieval.firstpass import ranked
from memcli.retrieval.params import GraphParams, HybridParams
from memcli.retrieval.relevance import Relevance
from memcli.retrieval.signals import SIGNALS
from tests.bench.genres import CACHE, DATA, GENRES, load_genre, shared_models
from tests.bench.rank_extra import columns, extra_rows


def question_rows(
    ctx: SearchContext, question: str, pagerank: bool, extra: dict[int, Any] | None = None
) -> dict[str, Any]:
    """The pool of one question as `hybrid` scores it (memcli.retrieval.relevance): node
    ids, refs, the signal matrix, ranks in the full-text and vector lists; with `extra`
    (a cache of contextual vectors), the columns of tests/bench/rank_extra.py too."""
    params = ctx.params("hybrid", HybridParams)
    found = Relevance.of(ctx, question, params.candidates)
    ids = list(found.rows)
    lex = {i: n for n, (i, _) in enumerate(ranked(found.fp.lexical))}
    cos = {i: n for n, (i, _) in enumerate(ranked(found.fp.cosine))}
    nodes = found.signals.nodes
    x = np.array([[found.rows[i][s] for s in SIGNALS] for i in ids], dtype=np.float32)
    if extra is not None:
        x = np.hstack([x, extra_rows(ctx, found, ids, extra)])
    out: dict[str, Any] = {
        "ids": ids,
        "refs": [nodes[i].ref or "" for i in ids],
        "x": x,
        "lex_rank": [lex.get(i, 9999) for i in ids],
        "cos_rank": [cos.get(i, 9999) for i in ids],
        "sessions": [nodes[i].session or "" for i in ids],
        "seqs": [nodes[i].seq if nodes[i].seq is not None else -1 for i in ids],
    }
    if pagerank:
        out["pagerank"] = _pagerank(ctx, found, ids)
    return out


def _pagerank(ctx: SearchContext, found: Relevance, ids: list[int]) -> list[float]:
    """The former default's PageRank: from the 40 best candidates (by score, squared), two
    hops, GAAMA's edge weights, max-normalised."""
    from memcli.graph import expand, max_normalised, personalized_pagerank

    graph_params = GraphParams()
    best = [(i, s) for i, s in ranked(found.relative(ids))[:40] if s > 0]
    graph = expand(ctx.store, [i for i, _ in best], graph_params.expand_depth,
                   hub_threshold=graph_params.hub_threshold,
                   max_nodes=graph_params.max_subgraph)  # fmt: skip
    ppr = personalized_pagerank(graph, {i: s * s for i, s in best},
                                type_weights=graph_params.type_weights(),
                                damping=graph_params.damping,
                                hub_threshold=graph_params.hub_threshold)  # fmt: skip
    ppr = max_normalised(ppr)
    return [ppr.get(i, 0.0) for i in ids]


def dump(args: argparse.Namespace) -> dict[str, Any]:
    """Every question of the chosen genres: its pool and its gold."""
    cfg = Config()
    if args.embedding:
        cfg = dataclasses.replace(
            cfg, embedding=dataclasses.replace(cfg.embedding, model=args.embedding)
        )
    if args.tune:
        from memcli.eval.variants import with_overrides

        pairs = dict(item.split("=", 1) for item in args.tune.split(","))
        cfg = dataclasses.replace(cfg, retrieval=with_overrides(cfg.retrieval, pairs, "hybrid"))
    shared = shared_models(cfg)
    code = code_hash()
    out: list[dict[str, Any]] = []
    for name in args.genres.split(","):
        genre = load_genre(name, str(DATA / GENRES[name]))
        for conv in genre.bench.conversations:
            db, _ = built_store(conv, cfg, args.cache / name, shared, code=code)
            mem = Memory(_on(cfg, db), **shared)
            vectors: dict[int, Any] | None = {} if args.extra else None
            started = time.perf_counter()
            try:
                for index, qa in enumerate(conv.questions):
                    ctx = SearchContext(mem.store, mem.space, mem.embedder, cfg.retrieval)
                    found = question_rows(ctx, qa["question"], args.pagerank, vectors)
                    label = genre.bench.labels.get(qa["category"], str(qa["category"]))
                    found.update(genre=name, conversation=conv.name, index=index,
                                 question=qa["question"], gold=list(qa["gold"]),
                                 category=label)  # fmt: skip
                    out.append(found)
            finally:
                mem.close()
            took = time.perf_counter() - started
            print(f"{name} {conv.name}: {len(conv.questions)} questions in {took:.1f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
    return {"signals": [*SIGNALS, *(columns() if args.extra else ())], "questions": out}


def _on(cfg: Config, db: Path) -> Config:
    return dataclasses.replace(cfg, db=str(db), space="default")


def save(found: dict[str, Any], path: Path) -> None:
    """Questions as JSON beside one matrix per question in an .npz."""
    arrays = {f"x{n}": q.pop("x") for n, q in enumerate(found["questions"])}
    for n, q in enumerate(found["questions"]):
        if "pagerank" in q:
            arrays[f"p{n}"] = np.asarray(q.pop("pagerank"), dtype=np.float32)
    meta = np.frombuffer(json.dumps(found).encode(), dtype=np.uint8)
    np.savez_compressed(path, meta=meta, **arrays)


def load(path: Path) -> dict[str, Any]:
    """What `save` wrote: questions with their matrix `x` (and `pagerank`)."""
    data = np.load(path)
    found = json.loads(bytes(data["meta"]).decode())
    for n, q in enumerate(found["questions"]):
        q["x"] = data[f"x{n}"]
        if f"p{n}" in data:
            q["pagerank"] = data[f"p{n}"]
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--genres", default=",".join(GENRES))
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pagerank", action="store_true")
    parser.add_argument("--extra", action="store_true", help="tests/bench/rank_extra.py too")
    parser.add_argument("--tune", default="", help="hybrid's parameters: name=value,...")
    parser.add_argument("--embedding", default="", help="stores built with this model")

    args = parser.parse_args(argv)
    save(dump(args), args.out)


if __name__ == "__main__":
    main()
