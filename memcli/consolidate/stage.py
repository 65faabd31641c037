"""The frame a stage works in: its report and counters, its model calls (validated, re-asked,
cached, run in parallel), splitting a unit that does not fit the model, and giving units up.

Rules every stage follows:
- a unit of work (a segment window, a facts chunk, ...) is written in ONE transaction,
  together with its `processed` marks, so a killed run loses at most the unit in flight;
- model calls (chat and embeddings) happen before that transaction, never inside it;
- units are taken in a stable order, and a unit's prompt depends only on what earlier
  units committed, so a resumed run ends with the same graph as an uninterrupted one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic

from memcli.consolidate.reports import FAILED_RUNS, StageReport
from memcli.llm.cached import CachedChat, Usage
from memcli.prompting import render

if TYPE_CHECKING:
    from memcli.consolidate.job import Job

M = TypeVar("M", bound=pydantic.BaseModel)
T = TypeVar("T")

MAX_REASKS = 2


class Unfit(Exception):
    """A unit's prompt does not fit the model's context window, or its reply was cut at the
    token limit: ask about less (see `halves`)."""


def halves(items: Sequence[T]) -> list[list[T]]:
    """Two halves of a unit that did not fit (one part when it cannot be split)."""
    middle = len(items) // 2
    return [list(items[:middle]), list(items[middle:])] if middle else [list(items)]


def parallel(fn: Callable[[Any], T], items: Sequence[Any], workers: int) -> list[T]:
    """fn over items on a small thread pool (in order); plain calls for one worker or item."""
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


class Stages:
    """The stages of one run by name, each made on first use: a stage may do work it counts
    under another (segment asks for summaries and counts them under summarize)."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self._made: dict[str, Stage] = {}

    def __getitem__(self, name: str) -> Stage:
        if name not in self._made:
            self._made[name] = Stage(self, name)
        return self._made[name]


class Stage:
    """One stage within a run: its report, its own token counters, and its model access."""

    def __init__(self, peers: Stages, name: str) -> None:
        self.job = job = peers.job
        self.name = name
        self.report = StageReport(name)
        self.usage = Usage()
        inner = job.chat_model
        self.chat = CachedChat(inner, job.store, self.usage) if inner is not None else None
        self.started = time.perf_counter()
        self._peers = peers
        self._lock = threading.Lock()  # replies are checked on worker threads

    def peer(self, name: str) -> Stage:
        """Another stage of the same run (its report, counters and chat)."""
        return self._peers[name]

    def units_spent(self) -> int:
        """Units of work this stage has used up: those done and those whose reply failed
        (a failing model must not turn `--limit 1` into a pass over every unit)."""
        return self.report.items + self.report.failures

    def budget_left(self) -> bool:
        """True while `--limit` allows another unit of work in this stage."""
        return self.job.limit is None or self.units_spent() < self.job.limit

    def prompt(self, name: str, **values: object) -> list[dict[str, str]]:
        """A rendered prompt (placeholders checked) as the messages of one request."""
        return [{"role": "user", "content": render(name, self.job.prompts_dir, **values)}]

    def ask(self, messages: list[dict[str, str]], model_cls: type[M]) -> M | None:
        """A validated reply, or None after the re-asks failed (counted as a failure).

        Unfit when the prompt does not fit the model's window or the reply was cut at its
        token limit: the caller asks about less (nothing of a cut reply is used). How each
        request ended is counted in the report (`json_first_try`, `json_repaired`, ...)."""
        from memcli.llm.structured import ask_structured
        from memcli.llm.window import PromptTooLong

        assert self.chat is not None, "LLM stages are skipped when there is no chat model"
        try:
            result = ask_structured(self.chat, messages, model_cls, max_reasks=MAX_REASKS)
        except PromptTooLong as exc:
            self.count("prompt_too_long", 1)
            raise Unfit(str(exc)) from None
        self.count(f"json_{result.outcome}", 1)
        if result.cut:
            raise Unfit(result.error or "cut")
        if result.value is None:
            with self._lock:
                self.report.failures += 1
        return result.value

    def ask_many(
        self, requests: Sequence[tuple[list[dict[str, str]], type[M]]]
    ) -> list[M | Unfit | None]:
        """`ask` for independent requests, `llm.concurrency` at a time, results in order
        (an Unfit in place of a request that did not fit)."""

        def one(request: tuple[list[dict[str, str]], type[M]]) -> M | Unfit | None:
            try:
                return self.ask(request[0], request[1])
            except Unfit as unfit:
                return unfit

        return parallel(one, requests, self.job.concurrency)

    def data_room(self, prompt: str, **empty: str) -> int | None:
        """Estimated tokens left for data in `prompt` (rendered with the `empty` values)
        within the model's window; None without a model that knows its window."""
        from memcli.llm.window import estimate

        inner = getattr(self.chat, "inner", None)
        window = getattr(inner, "window", None)
        if window is None:
            return None
        fitted = window()
        return int(fitted.prompt_budget / fitted.ratio) - estimate(self.prompt(prompt, **empty))

    def reply_room(self) -> int | None:
        """Tokens a reply may take (the reply's share of the window); None without a model
        that knows its window."""
        window = getattr(getattr(self.chat, "inner", None), "window", None)
        return None if window is None else int(window().reply)

    def split(
        self, kind: str, items: Sequence[T], again: Callable[[list[T]], None],
        node_id: Callable[[T], int],
    ) -> None:  # fmt: skip
        """A unit that did not fit the model: its halves asked in turn (`again`), and a
        single item that still does not fit given up for `kind`."""
        if len(items) == 1:
            self.give_up(kind, [node_id(items[0])])
            return
        for part in halves(items):
            again(part)

    def give_up(self, kind: str, ids: Sequence[int], reason: str = "too_long") -> None:
        """Mark a unit no later run would do either as done for `kind`, counted as `reason`."""
        with self.job.store.transaction():
            self.job.store.mark_processed(self.job.space, kind, list(ids))
        self.count(reason, 1)

    def failed(self, kind: str, ids: Sequence[int], give_up: bool = True) -> list[int]:
        """A unit's reply stayed invalid in this run: its nodes that have failed FAILED_RUNS
        runs for `kind`, given up (`given_up_invalid`) unless not `give_up`; others wait."""
        with self.job.store.transaction():
            runs = self.job.store.count_failed(self.job.space, kind, ids)
        spent = [i for i in ids if runs.get(i, 0) >= FAILED_RUNS]
        if spent and give_up:
            self.give_up(kind, spent, reason="given_up_invalid")
        return spent

    def known_ids(self, ids: Iterable[object], allowed: dict[str, int]) -> list[int]:
        """Row ids of the reply's node ids that were in the prompt; the rest are dropped."""
        out: list[int] = []
        for raw in ids:
            key = str(raw).strip().strip("[]").strip().lower()
            if key in allowed:
                if allowed[key] not in out:
                    out.append(allowed[key])
            else:
                self.report.dropped += 1
        return out

    def count(self, key: str, amount: int) -> None:
        """Add to a stage-specific count shown in the report."""
        with self._lock:
            self.report.extra[key] = self.report.extra.get(key, 0) + amount

    def sync_usage(self) -> None:
        """Copy the model counters into the report."""
        snap = self.usage.snapshot()
        for key, value in snap.items():
            setattr(self.report, key, value)
