"""`memcli eval locomo`: the LoCoMo retrieval benchmark, each conversation in its own store."""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.config import Config
from memcli.errors import InvalidInput, NotFound
from memcli.eval import answers, metrics
from memcli.progress import NoProgress, Progress
from memcli.text import word_count

if TYPE_CHECKING:
    from memcli.ops import Memory

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def load_samples(path: str) -> list[dict[str, Any]]:
    """The conversations of a locomo10.json-style file."""
    file = Path(path)
    if not file.is_file():
        raise NotFound(f"{path}: no such file")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput([f"{path}:1: not a LoCoMo JSON file ({exc})"]) from None
    samples = data if isinstance(data, list) else [data]
    if not samples or not all(isinstance(s, dict) and "conversation" in s for s in samples):
        raise InvalidInput(
            [f"{path}:1: expected LoCoMo conversations with 'conversation' and 'qa'"]
        )
    check_turns(path)
    return samples


def check_turns(path: str) -> None:
    """Reject bad turns with the file:line and conversation numbers `memcli ingest` gives."""
    from memcli.models import BadRecord
    from memcli.readers import read_source

    source = read_source(path, "locomo")
    bad = [r for r in source.records if isinstance(r, BadRecord)]
    problems = [f"{source.name}:{r.line}: {r.reason}" for r in bad]
    if problems:
        raise InvalidInput(
            problems,
            fix="fix these turns in the file: eval scores whole conversations, so it cannot "
            "skip them (`memcli ingest --skip-invalid` can, for storing the rest)",
        )


def questions(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The scored questions of a conversation: categories 1-4 with usable evidence."""
    out = []
    for qa in sample.get("qa", []):
        gold = metrics.gold_refs(qa.get("evidence", []))
        if qa.get("category") in CATEGORIES and gold and "answer" in qa:
            out.append({**qa, "gold": gold})
    return out


def _memory_for(
    sample: dict[str, Any], cfg: Config, workdir: Path, shared: dict[str, Any], consolidate: bool
) -> Any:
    """A fresh store holding only this conversation's turns (never its annotations)."""
    from memcli.ops import Memory

    conv_file = workdir / "conversation.json"
    turns_only = {"sample_id": sample.get("sample_id"), "conversation": sample["conversation"]}
    conv_file.write_text(json.dumps(turns_only), encoding="utf-8")
    mem = Memory(dataclasses.replace(cfg, db=str(workdir / "memory.db"), space="default"), **shared)
    mem.ingest([str(conv_file)], fmt="locomo")
    if consolidate:
        mem.consolidate(flush=True, no_llm=mem.chat is None)
    return mem


def _score(
    mem: Any, qa: dict[str, Any], strategy: str, ks: Sequence[int]
) -> tuple[dict[str, Any], str]:
    """Retrieval metrics of one question, and the packed context answers are made from."""
    started = time.perf_counter()
    answer = mem.ask(qa["question"], strategy=strategy, k=max(ks) * 2, context_only=True)
    latency = time.perf_counter() - started
    ranked = metrics.ranked_refs(answer.hits)
    row = {
        "question": qa["question"],
        "category": qa["category"],
        "answer": qa["answer"],
        "evidence": qa["gold"],
        "retrieved": ranked[: max(ks)],
        "recall": {str(k): metrics.recall_at(ranked, qa["gold"], k) for k in ks},
        "session_recall@10": metrics.session_recall_at(ranked, qa["gold"], 10),
        "covered": metrics.covers(answer.context, qa["answer"]),
        "context_words": word_count(answer.context),
        "latency_s": latency,
    }
    return row, answer.context


def _answer_all(
    mem: Any, items: list[tuple[dict[str, Any], dict[str, Any], str]], workers: int, progress: Any
) -> None:
    """Add answer metrics to each (row, qa, context), `workers` model requests at a time."""

    def one(item: tuple[dict[str, Any], dict[str, Any], str]) -> None:
        row, qa, context = item
        row.update(answers.score(mem, qa, context))
        progress.advance()

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(one, item) for item in items]
        try:
            for future in futures:
                future.result()
        except BaseException:
            # An unreachable server fails every queued question the same way: stop now.
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _run_sample(
    mem: Any,
    conv_id: str,
    sample: dict[str, Any],
    strategies: Sequence[str],
    ks: Sequence[int],
    progress: Progress,
    answering: bool,
) -> dict[str, list[dict[str, Any]]]:
    """Every strategy's rows for one conversation; with an LLM, answered and judged too."""
    out: dict[str, list[dict[str, Any]]] = {}
    for strategy in strategies:
        items = []
        for qa in questions(sample):
            row, context = _score(mem, qa, strategy, ks)
            items.append(({"conversation": conv_id, **row}, qa, context))
            if not answering:
                progress.advance()
        if answering:
            _answer_all(mem, items, mem.cfg.llm.concurrency, progress)
        out[strategy] = [row for row, _, _ in items]
    return out


def summarize(rows: list[dict[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    """Macro means over questions, overall and per category, as percentages."""

    def block(sel: list[dict[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {
            "n": len(sel),
            "recall": {str(k): 100 * metrics.mean([r["recall"][str(k)] for r in sel]) for k in ks},
            "session_recall@10": 100 * metrics.mean([r["session_recall@10"] for r in sel]),
            "coverage": 100 * metrics.mean([float(r["covered"]) for r in sel]),
        }
        answered = answers.summarize(sel)
        if answered is not None:
            result["answers"] = answered
        return result

    out = block(rows)
    out["by_category"] = {
        CATEGORIES[c]: block([r for r in rows if r["category"] == c])
        for c in CATEGORIES
        if any(r["category"] == c for r in rows)
    }
    latencies = sorted(r["latency_s"] for r in rows)
    out["latency_ms"] = {
        "mean": 1000 * metrics.mean(latencies),
        "p50": 1000 * latencies[len(latencies) // 2] if latencies else 0.0,
    }
    return out


def _score_sample(
    mem: Memory,
    index: int,
    sample: dict[str, Any],
    shared: dict[str, Any],
    strategies: Sequence[str],
    ks: Sequence[int],
    progress: Progress,
) -> tuple[tuple[str, str | None], dict[str, list[dict[str, Any]]]]:
    """((embedder, chat model), rows per strategy) for one conversation's store; the models
    are made once and kept in `shared` for the next conversations."""
    shared.setdefault("embedder", mem.load_embedder())  # load the model once
    chat = shared.setdefault("chat", mem.chat)  # one client for every conversation
    identity = (mem.embedder_identity(), None if chat is None else f"{chat.provider}:{chat.model}")
    conv_id = sample.get("sample_id") or f"conv{index}"
    done = _run_sample(mem, conv_id, sample, strategies, ks, progress, chat is not None)
    return identity, done


def run_locomo(
    path: str,
    cfg: Config,
    strategies: Sequence[str],
    ks: Sequence[int] = (5, 10, 20),
    progress: Progress | None = None,
    shared: dict[str, Any] | None = None,
    consolidate: bool = False,
) -> dict[str, Any]:
    """Ingest (and optionally consolidate) each conversation into a temporary store, then
    score every strategy on it."""
    from memcli.retrieval import get_retriever

    for name in strategies:
        get_retriever(name)  # fail on a typo before any work
    progress = progress or NoProgress()
    samples = load_samples(path)
    shared = dict(shared or {})
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in strategies}
    total = sum(len(questions(s)) for s in samples) * len(strategies)
    started = time.perf_counter()
    identity: tuple[str, str | None] = ("none", None)  # (embedder, chat model)
    progress.start("LoCoMo questions", total)
    try:
        for index, sample in enumerate(samples):
            with tempfile.TemporaryDirectory(prefix="memcli-eval-") as tmp:
                mem = _memory_for(sample, cfg, Path(tmp), shared, consolidate)
                try:
                    identity, done = _score_sample(
                        mem, index, sample, shared, strategies, ks, progress
                    )
                finally:
                    mem.close()
                for strategy in strategies:
                    rows[strategy].extend(done[strategy])
    finally:
        progress.finish()
    return {
        "file": path,
        "ks": list(ks),
        "embedding": identity[0],
        "consolidated": consolidate,
        "answers": _answers_info(identity[1], rows),
        "seconds": round(time.perf_counter() - started, 2),
        "results": {s: summarize(rows[s], ks) for s in strategies},
        "questions": rows,
    }


def _answers_info(chat: str | None, rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """How answers were made and judged, or why they were not."""
    if chat is None:
        return {"skipped": "no LLM is configured (llm.provider is 'none')"}
    every = [r for sel in rows.values() for r in sel]
    return {
        "model": chat,
        "judge": chat,
        "judge_protocol": "one call per answer: key facts of the gold answer marked present "
        "(reward = share present, GAAMA) and a yes/no correctness verdict (MemORAI)",
        "tokens_per_query": answers.TOKENS_NOTE,
        "llm_calls": sum(r.get("llm_calls", 0) for r in every),
        "cache_hits": sum(r.get("cache_hits", 0) for r in every),
        "judge_tokens": sum(r.get("judge_tokens", 0) for r in every),
    }
