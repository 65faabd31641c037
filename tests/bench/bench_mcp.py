"""Warm recall through `memcli mcp`, at the LoCoMo dev size and at N times it.

    nice -n 10 .venv/bin/python -m tests.bench.bench_mcp mcp LOCOMO_JSON [--factors 1,100]
    nice -n 10 .venv/bin/python -m tests.bench.bench_mcp all LOCOMO_JSON BEAM_DIR

mcp: builds the dev store and synthetic stores N times its size (tests/bench/synthetic.py:
the dev turns ingested and consolidated without an LLM, then copied with other speakers and
slightly moved vectors; kept under --workdir), starts `memcli --db STORE mcp` as a child
process, and times every dev question as a `recall` tool call from the SDK's own client
over stdio (client-side wall time: JSON-RPC, retrieval, packing, the JSON result), after a
few warm-up calls. It also times vector search alone in this process: sqlite-vec's scan
against the in-process index the server uses (`Store.use_vector_index`).
all: bench_embed's `speed` (cold ask torch vs onnx, ingest, --help) and `fidelity`, then
`mcp`: every figure of issue 11's acceptance from one process tree.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memcli.config import Config, load_config
from memcli.memory import Memory
from tests.bench import bench_embed
from tests.bench.synthetic import build_scaled, dev_questions

WARM_UP = 5


def percentiles(seconds: list[float]) -> dict[str, float]:
    """p50, p95 and mean in milliseconds."""
    ms = sorted(1000 * s for s in seconds)
    return {
        "p50": round(statistics.median(ms), 1),
        "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1),
        "mean": round(statistics.fmean(ms), 1),
    }


def _server_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's `memcli mcp` child."""
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == os.getpid() and b"mcp" in cmdline:
            return (int(fields[11]) + int(fields[12])) / tick
    raise SystemExit("the memcli mcp child process was not found")


async def _recall_times(db: Path, questions: list[str], strategy: str) -> tuple[list[float], float]:
    """Client-side seconds of one `recall` call per question, through a fresh server, and
    the server's mean CPU seconds per call (less sensitive to other load on the machine)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env["MEMCLI_EMBEDDING_OFFLINE"] = "1"
    args = ["-m", "memcli", "--db", str(db), "mcp"]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    times = []
    async with Client(params, read_timeout_seconds=300) as client:
        for question in questions[:WARM_UP]:
            await client.call_tool("recall", {"question": question, "strategy": strategy})
        cpu = _server_cpu()
        for question in questions:
            started = time.perf_counter()
            result = await client.call_tool("recall", {"question": question, "strategy": strategy})
            times.append(time.perf_counter() - started)
            if result.is_error:
                raise SystemExit(f"recall failed: {result.content[0].text}")
        cpu = (_server_cpu() - cpu) / len(questions)
    return times, cpu


def _vector_times(cfg: Config, db: Path, questions: list[str], shared: dict) -> dict[str, Any]:
    """Vector search alone (top 100 of all kinds): sqlite-vec's scan, then the index."""
    with Memory(dataclasses.replace(cfg, db=str(db), space="default"), **shared) as mem:
        vectors = mem.embedder.embed(questions)
        out: dict[str, Any] = {}
        for name in ("scan", "index"):
            if name == "index":
                started = time.perf_counter()
                mem.store.use_vector_index()
                out["index_load_s"] = round(time.perf_counter() - started, 2)
            mem.store.vector_search("default", vectors[0], 100)  # warm
            times = []
            for vector in vectors:
                started = time.perf_counter()
                mem.store.vector_search("default", vector, 100)
                times.append(time.perf_counter() - started)
            out[name] = percentiles(times)
    return out


def bench_mcp(args: argparse.Namespace) -> None:
    """Print warm MCP recall latency and vector search latency per store size."""
    cfg = load_config(args.config, overrides={})
    questions = dev_questions(Path(args.locomo))
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-mcp-"))
    workdir.mkdir(parents=True, exist_ok=True)
    shared: dict[str, Any] = {}
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{len(questions)} dev questions, strategy {args.strategy}, stores in {workdir}")
    print("| store | episodes | all nodes | MCP recall p50 / p95 / mean ms | server CPU ms/call | "
          "vector search "
          "scan p50 ms | index p50 ms | index load s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for factor in [int(f) for f in args.factors.split(",")]:
        started = time.perf_counter()
        db, counts = build_scaled(cfg, Path(args.locomo), workdir, factor, shared)
        print(f"{factor}x store ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        times, cpu = asyncio.run(_recall_times(db, questions, args.strategy))
        recall = percentiles(times)
        vec = _vector_times(cfg, db, questions, shared)
        print(
            f"| {factor}x | {counts.get('episode', 0)} | {sum(counts.values())} | "
            f"{recall['p50']} / {recall['p95']} / {recall['mean']} | {1000 * cpu:.1f} | "
            f"{vec['scan']['p50']} | "
            f"{vec['index']['p50']} | {vec['index_load_s']} |",
            flush=True,
        )


def bench_all(args: argparse.Namespace) -> None:
    """Cold start, ingest and --help (torch vs onnx), fidelity, then warm MCP recall."""
    print("## cold ask, ingest, --help (bench_embed speed)", flush=True)
    bench_embed.speed(argparse.Namespace(locomo=args.locomo, runs=args.runs))
    print("\n## fidelity (bench_embed fidelity)", flush=True)
    fidelity = argparse.Namespace(
        locomo=args.locomo, beam=args.beam, every=10, cache=None, int8=False
    )
    bench_embed.fidelity(fidelity)
    print("\n## warm recall through memcli mcp", flush=True)
    bench_mcp(args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("mcp", "all"):
        cmd = sub.add_parser(name)
        cmd.add_argument("locomo")
        if name == "all":
            cmd.add_argument("beam")
            cmd.add_argument("--runs", type=int, default=3, help="speed: runs per backend")
        cmd.add_argument("--factors", default="1,100", help="store sizes, times the dev data")
        cmd.add_argument("--strategy", default="hybrid")
        cmd.add_argument("--workdir", help="keep the built stores here (reused when present)")
        cmd.add_argument("--config", help="memcli config file (default: the usual lookup)")
    args = parser.parse_args()
    {"mcp": bench_mcp, "all": bench_all}[args.command](args)


if __name__ == "__main__":
    main()
