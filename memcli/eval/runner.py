"""What every retrieval benchmark shares: one fresh store per conversation, every strategy
asked every question, recall scored as DESIGN.md "Evaluation" defines it, and a report.

A benchmark (LoCoMo, annotated chats) only says how to read its files: it hands over
`Conversation`s, each with the inputs to ingest and the questions with their gold refs.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcli.config import Config
from memcli.eval import answers, metrics
from memcli.eval.gain import consolidation_gain
from memcli.progress import NoProgress, Progress
from memcli.text import word_count


@dataclass
class Conversation:
    """One conversation to benchmark: how to put it into a store, and its scored questions.

    `inputs(workdir)` returns the files to ingest (it may write them into `workdir`);
    each question has `question`, `answer`, `gold` (refs in order) and `category`;
    `session_of` maps a ref to its session, for session-level recall.
    """

    name: str
    inputs: Callable[[Path], list[str]]
    questions: list[dict[str, Any]]
    session_of: Callable[[str], str] = metrics.session_of
    fmt: str | None = None


@dataclass
class Benchmark:
    """A set of conversations and how to present its results."""

    title: str
    source: str
    conversations: list[Conversation]
    labels: Mapping[Any, str]  # category value -> its name, in report order
    grouping: str = "category"  # what a category is called in tables ("type" for chats)


def memory_for(
    conv: Conversation, cfg: Config, workdir: Path, shared: dict[str, Any], consolidate: bool
) -> tuple[Any, dict[str, float]]:
    """A fresh store holding only this conversation's turns, and what it took to build."""
    from memcli.memory import Memory

    mem = Memory(dataclasses.replace(cfg, db=str(workdir / "memory.db"), space="default"), **shared)
    timing = {"ingest_s": 0.0, "consolidate_s": 0.0}
    started = time.perf_counter()
    mem.ingest(conv.inputs(workdir), fmt=conv.fmt)
    timing["ingest_s"] = time.perf_counter() - started
    if consolidate:
        started = time.perf_counter()
        mem.consolidate(flush=True, no_llm=mem.chat is None)
        timing["consolidate_s"] = time.perf_counter() - started
    return mem, timing


def score_question(
    mem: Any, conv: Conversation, qa: dict[str, Any], strategy: str, ks: Sequence[int]
) -> tuple[dict[str, Any], str]:
    """Retrieval metrics of one question, and the packed context answers are made from."""
    started = time.perf_counter()
    answer = mem.ask(qa["question"], strategy=strategy, k=max(ks) * 2, context_only=True)
    latency = time.perf_counter() - started
    ranked = metrics.ranked_refs(answer.hits)
    gold = qa["gold"]
    row = {
        "question": qa["question"],
        "category": qa["category"],
        "answer": qa["answer"],
        "evidence": gold,
        "retrieved": ranked[: max(ks)],
        "recall": {str(k): metrics.recall_at(ranked, gold, k) for k in ks},
        "session_recall@10": metrics.session_recall_at(ranked, gold, 10, conv.session_of),
        "covered": metrics.covers(answer.context, qa["answer"]),
        "context_words": word_count(answer.context),
        "latency_s": latency,
    }
    return row, answer.context


def _answer_all(
    mem: Any,
    items: list[tuple[dict[str, Any], dict[str, Any], str]],
    progress: Any,
    strategy: str,
    k: int,
) -> None:
    """Add answer metrics to each (row, qa, context), `llm.concurrency` model requests at a
    time; a context too long for the model is packed again as `_score` packed it, in fewer
    words."""
    from memcli.ops.ask import ask

    def one(item: tuple[dict[str, Any], dict[str, Any], str]) -> None:
        row, qa, context = item

        def repack(words: int) -> str:
            question = qa["question"]
            return ask(mem, question, strategy=strategy, k=k, context_only=True,
                       word_budget=words).context  # fmt: skip

        row.update(answers.score(mem, qa, context, repack))
        progress.advance()

    with ThreadPoolExecutor(max_workers=max(1, mem.cfg.llm.concurrency)) as pool:
        futures = [pool.submit(one, item) for item in items]
        try:
            for future in futures:
                future.result()
        except BaseException:
            # An unreachable server fails every queued question the same way: stop now.
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _run_conversation(
    mem: Any,
    conv: Conversation,
    strategies: Sequence[str],
    ks: Sequence[int],
    progress: Progress,
    answering: bool,
) -> dict[str, list[dict[str, Any]]]:
    """Every strategy's rows for one conversation; with an LLM, answered and judged too."""
    out: dict[str, list[dict[str, Any]]] = {}
    for strategy in strategies:
        items = []
        for qa in conv.questions:
            row, context = score_question(mem, conv, qa, strategy, ks)
            items.append(({"conversation": conv.name, **row}, qa, context))
            if not answering:
                progress.advance()
        if answering:
            _answer_all(mem, items, progress, strategy, max(ks) * 2)
        out[strategy] = [row for row, _, _ in items]
    return out


def _block(sel: list[dict[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
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


def summarize(
    rows: list[dict[str, Any]], ks: Sequence[int], labels: Mapping[Any, str]
) -> dict[str, Any]:
    """Macro means over questions, overall and per category, as percentages."""
    out = _block(rows, ks)
    out["by_category"] = {
        name: _block([r for r in rows if r["category"] == c], ks)
        for c, name in labels.items()
        if any(r["category"] == c for r in rows)
    }
    latencies = sorted(r["latency_s"] for r in rows)
    out["latency_ms"] = {
        "mean": 1000 * metrics.mean(latencies),
        "p50": 1000 * latencies[len(latencies) // 2] if latencies else 0.0,
    }
    return out


def check_strategies(names: Sequence[str]) -> None:
    """Fail on an unknown strategy name before any work."""
    from memcli.retrieval import get_retriever

    for name in names:
        get_retriever(name)


def _warm_embedder(cfg: Config, shared: dict[str, Any]) -> None:
    """Load the embedding model once, before any timing starts."""
    from memcli.llm import create_embedder

    if "embedder" not in shared:
        shared["embedder"] = create_embedder(cfg.embedding)
    if shared["embedder"] is not None:
        shared["embedder"].embed(["warm-up"])


def run_benchmark(
    bench: Benchmark,
    cfg: Config,
    strategies: Sequence[str],
    ks: Sequence[int] = (5, 10, 20),
    progress: Progress | None = None,
    shared: dict[str, Any] | None = None,
    consolidate: bool = False,
) -> dict[str, Any]:
    """Ingest (and optionally consolidate) each conversation into a temporary store, then
    score every strategy on it."""
    check_strategies(strategies)
    progress = progress or NoProgress()
    shared = dict(shared or {})
    rows: dict[str, list[dict[str, Any]]] = {s: [] for s in strategies}
    before: dict[str, list[dict[str, Any]]] = {s: [] for s in strategies}
    timings: dict[str, dict[str, float]] = {}
    total = sum(len(c.questions) for c in bench.conversations) * len(strategies)
    total *= 2 if consolidate else 1
    started = time.perf_counter()
    chat_identity: str | None = None
    identity = "none"
    _warm_embedder(cfg, shared)
    progress.start(f"{bench.title} questions", total)
    try:
        for conv in bench.conversations:
            with tempfile.TemporaryDirectory(prefix="memcli-eval-") as tmp:
                mem, timings[conv.name] = memory_for(conv, cfg, Path(tmp), shared, False)
                chat = shared.setdefault("chat", mem.chat)  # one client for every conversation
                identity = mem.embedder_identity()
                chat_identity = None if chat is None else f"{chat.provider}:{chat.model}"
                try:
                    if consolidate:  # the same questions first of the store ingest left
                        done = _run_conversation(mem, conv, strategies, ks, progress, False)
                        for strategy in strategies:
                            before[strategy].extend(done[strategy])
                        timings[conv.name]["consolidate_s"] = _consolidate(mem)
                    done = _run_conversation(mem, conv, strategies, ks, progress, chat is not None)
                finally:
                    mem.close()
                for strategy in strategies:
                    rows[strategy].extend(done[strategy])
    finally:
        progress.finish()
    report: dict[str, Any] = {
        "title": bench.title,
        "file": bench.source,
        "grouping": bench.grouping,
        "ks": list(ks),
        "embedding": identity,
        "consolidated": consolidate,
        "answers": _answers_info(chat_identity, rows),
        "seconds": round(time.perf_counter() - started, 2),
        "timing": _timing(timings),
        "results": {s: summarize(rows[s], ks, bench.labels) for s in strategies},
        "questions": rows,
    }
    if consolidate:
        report["consolidation"] = consolidation_gain(before, rows, ks, bench.labels)
    return report


def _consolidate(mem: Any) -> float:
    """Consolidate the store (the no-LLM stages when no model is set); seconds it took."""
    started = time.perf_counter()
    mem.consolidate(flush=True, no_llm=mem.chat is None)
    return time.perf_counter() - started


def _timing(per_conversation: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Seconds spent building the stores: totals and per conversation."""
    rounded = {c: {k: round(v, 2) for k, v in t.items()} for c, t in per_conversation.items()}
    return {
        "ingest_s": round(sum(t["ingest_s"] for t in per_conversation.values()), 2),
        "consolidate_s": round(sum(t["consolidate_s"] for t in per_conversation.values()), 2),
        "conversations": rounded,
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
