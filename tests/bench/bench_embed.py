"""Local embeddings: the torch path against the ONNX path, side by side in one process tree.

    .venv/bin/python -m tests.bench.bench_embed fidelity LOCOMO_JSON BEAM_DIR [--int8]
    nice -n 10 .venv/bin/python -m tests.bench.bench_embed speed LOCOMO_JSON [--runs 5]
    nice -n 10 .venv/bin/python -m tests.bench.bench_embed recall LOCOMO_JSON
    nice -n 10 .venv/bin/python -m tests.bench.bench_embed beam BEAM_DIR [--int8]

fidelity: cosine between sentence-transformers and onnxruntime vectors of every LoCoMo turn
and a sample of beam-dev messages (as memcli embeds them: `speaker: text`).
speed: cold `memcli ask --context-only` (wall time and max RSS of each child process, read
with os.wait4), ingest of the LoCoMo file including model load, and `memcli --help`; the
backends alternate run by run so machine load hits them alike. Needs memcli[local] (torch).
recall: `memcli eval locomo --strategy lexical,semantic,hybrid` per backend, recall@k.
beam: vector-only recall@k of each beam-dev question's evidence messages, per backend (in
process: there is no beam-dev eval command yet).
--int8 adds the same graph with int8 weights (fidelity and beam only; memcli does not ship it).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "chat.jsonl"
QUESTION = "What did they plan to do next weekend?"  # any question; not from the data
BACKENDS = {
    "torch": {"backend": "sentence-transformers"},
    "onnx": {"backend": "onnx"},
}


def locomo_texts(path: str) -> list[str]:
    """Every turn of a LoCoMo file as memcli embeds it."""
    from memcli.models import Episode, embedding_text
    from memcli.readers import read_source

    source = read_source(path)
    return [embedding_text(e.text, e.speaker) for e in source.records if isinstance(e, Episode)]


def beam_texts(folder: str, every: int) -> list[str]:
    """Every `every`-th message of each beam-dev conversation file."""
    texts: list[str] = []
    for path in sorted(Path(folder).glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        texts += [f"{r['role']}: {r['content']}" for r in rows[::every]]
    return texts


def _int8_embedder(cache: str | None) -> Any:
    """The float graph with int8 MatMul weights (one scale per channel), for measuring only:
    memcli ships no int8 option, as it lost 2.3 points of LoCoMo semantic recall@10."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from memcli.config import EmbeddingConfig
    from memcli.llm.onnx_embed import OnnxEmbedder

    scratch = Path(tempfile.mkdtemp(prefix="bench-int8-"))

    class Int8(OnnxEmbedder):
        def _graph_path(self) -> str:
            target = scratch / "model.int8.onnx"
            if not target.exists():
                quantize_dynamic(
                    super()._graph_path(),
                    target,
                    op_types_to_quantize=["MatMul"],
                    per_channel=True,
                    weight_type=QuantType.QInt8,
                    use_external_data_format=True,
                )
            return str(target)

    return Int8(EmbeddingConfig(cache_dir=cache))


def _cosines(a: Any, b: Any) -> Any:
    import numpy as np

    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def fidelity(args: argparse.Namespace) -> None:
    """Print cosine statistics per text set and backend against sentence-transformers."""
    from memcli.config import EmbeddingConfig
    from memcli.llm.local import LocalEmbedder
    from memcli.llm.onnx_embed import OnnxEmbedder

    sets = {"locomo": locomo_texts(args.locomo), "beam": beam_texts(args.beam, args.every)}
    torch_model = LocalEmbedder()
    variants = {"onnx": OnnxEmbedder(EmbeddingConfig(cache_dir=args.cache))}
    if args.int8:
        variants["onnx-int8"] = _int8_embedder(args.cache)
    for name, texts in sets.items():
        reference = torch_model.embed(texts)
        pieces = variants["onnx"]._load()[1].encode_batch(texts)
        cut = sum(len(p.ids) >= variants["onnx"].files.max_length for p in pieces)
        for label, embedder in variants.items():
            cos = _cosines(reference, embedder.embed(texts))
            print(
                f"{name:7} {label:9} texts={len(texts):5} at-window={cut:4} "
                f"cosine mean={cos.mean():.7f} min={cos.min():.7f}"
            )


class Child(NamedTuple):
    """What one child process cost."""

    wall: float  # seconds
    cpu: float  # user + system seconds, all threads
    rss: float  # max resident MB
    out: str


def _run(cmd: list[str], env: dict[str, str]) -> Child:
    """Run one child process and read its own rusage (os.wait4, not a running maximum)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.read()[-2000:]}")
        cpu = usage.ru_utime + usage.ru_stime
        return Child(wall, cpu, usage.ru_maxrss / 1024, out.read().decode())


def _env(tmp: Path, name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env["MEMCLI_EMBEDDING_CACHE_DIR"] = str(tmp / "cache")
    env["MEMCLI_EMBEDDING_OFFLINE"] = "1"
    env["MEMCLI_DB"] = str(tmp / f"{name}.db")
    for key, value in BACKENDS[name].items():
        env[f"MEMCLI_EMBEDDING_{key.upper()}"] = value
    return env


def speed(args: argparse.Namespace) -> None:
    """Print a table of cold ask, ingest throughput and --help, per backend."""
    names = ["torch", "onnx"]
    memcli = [sys.executable, "-m", "memcli"]
    turns = len(locomo_texts(args.locomo))
    times: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        env = {**_env(tmp, "onnx"), "MEMCLI_DB": str(tmp / "warm.db")}
        first = _run([*memcli, "ingest", str(EXAMPLE)], env)  # builds the graph once
        print(f"onnx first use (graph build, 16 turns): {first.wall:.2f} s", file=sys.stderr)
        for run in range(args.runs):
            for name in names:
                env = _env(tmp, name)
                Path(env["MEMCLI_DB"]).unlink(missing_ok=True)
                _record(times[name], "ingest", _run([*memcli, "ingest", args.locomo], env))
                asked = _run([*memcli, "ask", "--context-only", QUESTION], env)
                _record(times[name], "ask", asked)
            _record(times["onnx"], "help", _run([*memcli, "--help"], _env(tmp, "onnx")))
            print(f"run {run + 1}/{args.runs} done", file=sys.stderr)
    _print_speed(times, names, turns)


def _record(table: dict[str, list[float]], what: str, child: Child) -> None:
    for key in ("wall", "cpu", "rss"):
        table.setdefault(f"{what}_{key}", []).append(getattr(child, key))


def _print_speed(times: dict[str, dict[str, list[float]]], names: list[str], turns: int) -> None:
    med = {n: {k: statistics.median(v) for k, v in times[n].items()} for n in names}
    base = med["torch"]
    print("medians; wall seconds, CPU seconds (user+system), max RSS of each child process")
    print(
        "| backend | cold ask wall (min–max) | ask CPU | ask RSS MB | ingest wall | turns/s "
        "| ingest CPU | ingest RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        m, asks = med[name], times[name]["ask_wall"]
        print(
            f"| {name} | {m['ask_wall']:.2f} ({min(asks):.2f}–{max(asks):.2f}) | "
            f"{m['ask_cpu']:.2f} | {m['ask_rss']:.0f} | {m['ingest_wall']:.1f} | "
            f"{turns / m['ingest_wall']:.0f} | {m['ingest_cpu']:.1f} | {m['ingest_rss']:.0f} |"
        )
    for name in names[1:]:
        m = med[name]
        print(
            f"\n{name} vs torch: cold ask ×{base['ask_wall'] / m['ask_wall']:.1f} wall "
            f"(×{base['ask_cpu'] / m['ask_cpu']:.1f} CPU); ingest throughput "
            f"×{base['ingest_wall'] / m['ingest_wall']:.2f} wall "
            f"(×{base['ingest_cpu'] / m['ingest_cpu']:.2f} CPU)"
        )
    helps = times["onnx"]["help_wall"]
    print(f"`memcli --help`: median {statistics.median(helps):.2f} s, max {max(helps):.2f} s")


def recall(args: argparse.Namespace) -> None:
    """Print recall@k per strategy and backend, from `memcli --json eval locomo`."""
    names = ["torch", "onnx"]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            cmd = [sys.executable, "-m", "memcli", "--json", "eval", "locomo", args.locomo]
            cmd += ["--strategy", "lexical,semantic,hybrid"]
            results[name] = json.loads(_run(cmd, _env(Path(folder), name)).out)["results"]
            print(f"{name}: evaluated", file=sys.stderr)
    print("| strategy | backend | recall@5 | recall@10 | recall@20 | Δ@10 vs torch |")
    print("|---|---|---|---|---|---|")
    for strategy, base in results["torch"].items():
        for name in names:
            got = results[name][strategy]["recall"]
            delta = got["10"] - base["recall"]["10"]
            cells = " | ".join(f"{got[k]:.2f}" for k in ("5", "10", "20"))
            print(f"| {strategy} | {name} | {cells} | {delta:+.2f} |")


def _beam_conversations(folder: str) -> list[tuple[list[int], list[str], list[dict[str, Any]]]]:
    out = []
    for path in sorted(Path(folder).glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        questions = json.loads(
            path.with_name(path.name.split(".")[0] + ".questions.json").read_text()
        )
        ids = [int(r["id"]) for r in rows]
        out.append((ids, [f"{r['role']}: {r['content']}" for r in rows], questions))
    return out


def beam(args: argparse.Namespace) -> None:
    """Vector-only recall@k of the evidence messages of beam-dev questions, per backend."""
    from memcli.config import EmbeddingConfig
    from memcli.llm.local import LocalEmbedder
    from memcli.llm.onnx_embed import OnnxEmbedder

    embedders: dict[str, Any] = {
        "torch": LocalEmbedder(),
        "onnx": OnnxEmbedder(EmbeddingConfig(cache_dir=args.cache)),
    }
    if args.int8:
        embedders["onnx-int8"] = _int8_embedder(args.cache)
    conversations = _beam_conversations(args.beam)
    print(f"| backend | questions | vector recall@{args.k} | embed s |")
    print("|---|---|---|---|")
    for name, embedder in embedders.items():
        scores, started = [], time.perf_counter()
        for ids, texts, questions in conversations:
            messages = embedder.embed(texts)
            asked = embedder.embed([q["question"] for q in questions])
            for question, row in zip(questions, asked @ messages.T, strict=True):
                top = {ids[i] for i in row.argsort()[::-1][: args.k]}
                scores.append(len(top & set(question["evidence"])) / len(question["evidence"]))
        took = time.perf_counter() - started
        print(f"| {name} | {len(scores)} | {100 * statistics.mean(scores):.2f} | {took:.0f} |")


def main() -> None:
    """Parse the subcommand and run it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fid = sub.add_parser("fidelity")
    fid.add_argument("locomo")
    fid.add_argument("beam")
    fid.add_argument("--every", type=int, default=10, help="beam-dev: keep every Nth message")
    fid.add_argument("--cache", default=None, help="graph cache dir (default: platform's)")
    fid.add_argument("--int8", action="store_true")
    spd = sub.add_parser("speed")
    spd.add_argument("locomo")
    spd.add_argument("--runs", type=int, default=5)
    rec = sub.add_parser("recall")
    rec.add_argument("locomo")
    bea = sub.add_parser("beam")
    bea.add_argument("beam")
    bea.add_argument("--k", type=int, default=10)
    bea.add_argument("--cache", default=None, help="graph cache dir (default: platform's)")
    bea.add_argument("--int8", action="store_true")
    args = parser.parse_args()
    commands = {"fidelity": fidelity, "speed": speed, "recall": recall, "beam": beam}
    commands[args.command](args)


if __name__ == "__main__":
    main()
