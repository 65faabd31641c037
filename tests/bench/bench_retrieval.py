"""Retrieval benchmarks: latency by strategy, igraph PPR vs plain Python, scaling with size.

    python tests/bench/bench_retrieval.py latency [--consolidate]   # dev stores, per strategy
    python tests/bench/bench_retrieval.py ppr [--edges 100000]      # igraph vs dict loops
    python tests/bench/bench_retrieval.py scale [--factors 1,10,100]  # synthetic 1x/10x/100x
    python tests/bench/bench_retrieval.py all --json-out bench.json

Stores are built under --workdir (default: a temporary directory) with the configured
embedder (the bundled MiniLM by default). Not collected by pytest: run it by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memcli.config import Config, load_config  # noqa: E402
from memcli.eval import locomo  # noqa: E402
from memcli.eval.runner import memory_for  # noqa: E402
from memcli.graph import LocalGraph, personalized_pagerank  # noqa: E402
from memcli.memory import Memory  # noqa: E402
from memcli.ops.ask import search_context  # noqa: E402
from memcli.retrieval import get_retriever  # noqa: E402
from tests.bench.reference import reference_ppr  # noqa: E402
from tests.bench.synthetic import build_scaled, dev_questions  # noqa: E402

# The dev file beside the checkout, or wherever LOCOMO_DEV points (a git worktree elsewhere).
DEV = Path(os.environ.get("LOCOMO_DEV") or ROOT.parent / "shared" / "data" / "locomo-dev.json")
STRATEGIES = ("lexical", "semantic", "hybrid", "dwpr", "gam")


def summary(seconds: list[float]) -> dict[str, float]:
    """Mean, median and 95th percentile in milliseconds."""
    ms = sorted(1000 * s for s in seconds)
    return {
        "mean_ms": round(statistics.fmean(ms), 2),
        "p50_ms": round(ms[len(ms) // 2], 2),
        "p95_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
    }


def time_queries(mem: Memory, strategy: str, questions: list[str], k: int) -> dict[str, Any]:
    """Per-query latency of one strategy: total (with the query embedding) and retrieval only."""
    retrieve = get_retriever(strategy)
    total, only = [], []
    for q in questions:
        ctx = search_context(mem)
        started = time.perf_counter()
        ctx.query_vector(q)
        embedded = time.perf_counter()
        retrieve(ctx, q, k)
        done = time.perf_counter()
        total.append(done - started)
        only.append(done - embedded)
    return {"total": summary(total), "retrieval": summary(only), "queries": len(questions)}


def bench_latency(cfg: Config, workdir: Path, consolidate: bool) -> dict[str, Any]:
    """Per-query latency of every strategy on each dev conversation's own store."""
    shared: dict[str, Any] = {}
    out: dict[str, Any] = {"consolidated": consolidate, "strategies": {}}
    for conv in locomo.benchmark(str(DEV)).conversations:
        home = workdir / f"latency-{conv.name}-{int(consolidate)}"
        home.mkdir(parents=True, exist_ok=True)
        mem, _ = memory_for(conv, cfg, home, shared, consolidate)
        shared.setdefault("embedder", mem.load_embedder())
        questions = [qa["question"] for qa in conv.questions]
        time_queries(mem, "hybrid", questions[:5], cfg.retrieval.pool)  # warm caches
        for strategy in STRATEGIES:
            result = time_queries(mem, strategy, questions, cfg.retrieval.pool)
            out["strategies"].setdefault(strategy, {})[conv.name] = result
        mem.close()
    return out


def synthetic_graph(edges: int, seed: int = 7) -> tuple[LocalGraph, dict[int, float]]:
    """A conversation-shaped graph with `edges` edges: NEXT chains, segments, concepts."""
    rng = random.Random(seed)
    turns = edges // 3
    ids = rng.sample(range(1, 50 * edges), turns + turns // 6 + turns // 20)
    episodes, segments, concepts = ids[:turns], ids[turns : turns + turns // 6], ids[-turns // 20 :]
    rows: list[tuple[int, int, str, float]] = []
    for a, b in itertools.pairwise(episodes):
        rows.append((a, b, "NEXT", 1.0))
    for i, ep in enumerate(episodes):
        rows.append((ep, segments[min(i // 6, len(segments) - 1)], "PART_OF", 1.0))
    while len(rows) < edges:  # concepts with a skewed popularity: some become hubs
        concept = concepts[min(int(rng.paretovariate(1.2)) - 1, len(concepts) - 1)]
        rows.append((rng.choice(episodes), concept, "HAS_CONCEPT", 1.0))
    graph = LocalGraph.build(ids, rows)
    reset = {node: rng.random() ** 2 for node in rng.sample(episodes, 40)}
    return graph, reset


def bench_ppr(cfg: Config, edges: int, repeats: int) -> dict[str, Any]:
    """igraph's PPR (with the weights built in Python) against dict-loop power iteration."""
    graph, reset = synthetic_graph(edges)
    r = cfg.retrieval
    args = {
        "type_weights": r.type_weights(),
        "damping": r.damping,
        "hub_threshold": r.hub_threshold,
    }
    fast = []
    for _ in range(repeats):
        started = time.perf_counter()
        got = personalized_pagerank(graph, reset, **args)
        fast.append(time.perf_counter() - started)
    started = time.perf_counter()
    want = reference_ppr(graph, reset, max_iter=200, tol=1e-6, **args)
    slow = time.perf_counter() - started
    top_fast = sorted(got, key=got.get, reverse=True)[:20]
    top_slow = sorted(want, key=want.get, reverse=True)[:20]
    return {
        "vertices": len(graph),
        "edges": len(graph.edges),
        "igraph_ms": round(1000 * min(fast), 1),
        "python_ms": round(1000 * slow, 1),
        "speedup": round(slow / min(fast), 1),
        "max_abs_diff": max(abs(got[n] - want[n]) for n in graph.nodes),
        "top20_overlap": len(set(top_fast) & set(top_slow)),
    }


def bench_scale(cfg: Config, workdir: Path, factors: list[int], strategies: list[str]) -> dict:
    """Query latency on synthetic stores of 1x, 10x, 100x the dev data (consolidated)."""
    out: dict[str, Any] = {}
    questions = dev_questions(DEV)
    shared: dict[str, Any] = {}
    for factor in factors:
        path, counts = build_scaled(cfg, DEV, workdir, factor, shared)
        mem = Memory(dataclasses.replace(cfg, db=str(path), space="default"), **shared)
        time_queries(mem, "hybrid", questions[:5], cfg.retrieval.pool)  # warm caches
        out[f"{factor}x"] = {
            "nodes": counts,
            **{s: time_queries(mem, s, questions, cfg.retrieval.pool) for s in strategies},
        }
        mem.close()
    first, last = f"{factors[0]}x", f"{factors[-1]}x"
    out["ratio"] = {
        s: {
            part: round(out[last][s][part]["mean_ms"] / out[first][s][part]["mean_ms"], 2)
            for part in ("total", "retrieval")
        }
        for s in strategies
    }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["latency", "ppr", "scale", "all"])
    parser.add_argument("--config", help="memcli config file (default: the usual lookup)")
    parser.add_argument("--workdir", type=Path, help="keep the built stores here")
    parser.add_argument("--consolidate", action="store_true", help="latency: consolidate first")
    parser.add_argument("--edges", type=int, default=100_000, help="ppr: subgraph edges")
    parser.add_argument("--repeats", type=int, default=5, help="ppr: igraph runs (best kept)")
    parser.add_argument("--factors", default="1,10,100", help="scale: sizes, x the dev data")
    parser.add_argument("--strategies", default="hybrid,dwpr,gam", help="scale: strategies")
    parser.add_argument("--json-out", type=Path, help="write the results here as JSON")
    opts = parser.parse_args(argv)
    cfg = load_config(opts.config)
    with tempfile.TemporaryDirectory(prefix="memcli-bench-") as tmp:
        workdir = opts.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        results: dict[str, Any] = {"embedding": f"{cfg.embedding.provider}:{cfg.embedding.model}"}
        if opts.what in ("latency", "all"):
            results["latency"] = bench_latency(cfg, workdir, opts.consolidate)
        if opts.what in ("ppr", "all"):
            results["ppr"] = bench_ppr(cfg, opts.edges, opts.repeats)
        if opts.what in ("scale", "all"):
            factors = [int(f) for f in opts.factors.split(",")]
            results["scale"] = bench_scale(cfg, workdir, factors, opts.strategies.split(","))
    text = json.dumps(results, indent=1)
    print(text)
    if opts.json_out:
        opts.json_out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
