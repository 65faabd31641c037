"""What every consolidation stage shares: the run (`Job`: settings, models, caches), a
stage's model calls and counters (`Stage`), and the helpers several stages use.

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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic

from memcli.consolidate.concept_index import ConceptIndex
from memcli.consolidate.entity_index import EntityIndex
from memcli.consolidate.names import CaseStats, Mention
from memcli.consolidate.phrases import Corpus, name_tokens
from memcli.consolidate.reports import STAGES, StageReport
from memcli.llm.cached import CachedChat, Usage
from memcli.llm.embedder import embed_all
from memcli.models import Edge, Node
from memcli.progress import NoProgress, Progress
from memcli.prompting import render
from memcli.timeexpr import resolve_relative

if TYPE_CHECKING:
    from memcli.config import Config, ConsolidationConfig
    from memcli.consolidate.options import ConsolidateOptions
    from memcli.llm import ChatModel, Embedder
    from memcli.store import Store

M = TypeVar("M", bound=pydantic.BaseModel)
T = TypeVar("T")

MAX_REASKS = 2
FAILED_RUNS = 3  # runs whose reply for a unit stayed invalid before the unit is given up


@dataclass(frozen=True)
class RunContext:
    """What a consolidation run is given by its caller: the store and space, the settings,
    the models, where to report progress, and how to record which embedder wrote vectors.

    Consolidation sits below the library API (memcli.ops) and never sees its Memory.
    """

    store: Store
    space: str
    config: Config
    chat: ChatModel | None
    #: The embedder (None when embeddings are off), loaded on first use: a dry run or a
    #: run with nothing to embed never loads a model.
    load_embedder: Callable[[], Embedder | None]
    #: Notes in the store which embedder its vectors come from, and their length. Called
    #: inside the transaction that stores vectors.
    record_embedder: Callable[[int | None], None]
    progress: Progress = field(default_factory=NoProgress)


class Job:
    """One consolidation run: its context, settings, unit limit and shared caches."""

    def __init__(self, ctx: RunContext, options: ConsolidateOptions) -> None:
        self.ctx = ctx
        self.options = options
        self.store = ctx.store
        self.space = ctx.space
        self.cfg: ConsolidationConfig = ctx.config.consolidation
        self.prompts_dir = ctx.config.prompts_dir
        self.concurrency = ctx.config.llm.concurrency
        self.chat_model = ctx.chat
        self.flush = options.flush  # also close the newest session's buffer
        self.limit = options.limit  # units of work per stage
        self.selected: frozenset[str] = frozenset(STAGES)
        self.progress = ctx.progress
        self.stages: dict[str, Stage] = {}
        self.summary_attempted: set[int] = set()  # segments whose LLM summary ran this run
        self._vectors: dict[str, Any] = {}  # text -> embedding, made by `prefetch`
        self._episodes: list[Node] | None = None
        self._corpus: Corpus | None = None
        self._concepts: ConceptIndex | None = None
        self._session_of: dict[int, str | None] | None = None
        self.entities: EntityIndex | None = None  # memcli.consolidate.entity_index
        self.case_stats: CaseStats | None = None  # how the space capitalises words
        self.mentions: dict[str, list[Mention]] = {}  # text -> the names the rules find in it

    def stage(self, name: str) -> Stage:
        """The Stage object (counters, chat) of a stage of this run."""
        if name not in self.stages:
            self.stages[name] = Stage(self, name)
        return self.stages[name]

    def episodes(self) -> list[Node]:
        """Every episode of the space in conversation order (read once per run)."""
        if self._episodes is None:
            self._episodes = list(self.store.iter_nodes(self.space, "episode", order="time"))
        return self._episodes

    def session_of(self) -> dict[int, str | None]:
        """Episode id -> its session."""
        if self._session_of is None:
            self._session_of = {e.id: e.session for e in self.episodes()}
        return self._session_of

    @property
    def names(self) -> frozenset[str]:
        """Words of the space's speaker names (never concepts or key phrases)."""
        return name_tokens({e.speaker for e in self.episodes()})

    @property
    def corpus(self) -> Corpus:
        """Phrase document frequencies over the space's episodes (built on first use)."""
        if self._corpus is None:
            eps = self.episodes()
            self._corpus = Corpus.build(((e.id, e.text) for e in eps), self.names)
        return self._corpus

    @property
    def concepts(self) -> ConceptIndex:
        """The space's concepts by canonical label and alias (read on first use)."""
        if self._concepts is None:
            self._concepts = ConceptIndex(self.store, self.space, self.names, self.corpus.generic)
        return self._concepts

    def prefetch(self, texts: Iterable[str]) -> None:
        """Embed texts ahead of the units that store them, in few large calls.

        Embedding is deterministic, so a vector made now is the one the unit would make;
        small calls cost far more per text than large ones.
        """
        embedder = self.ctx.load_embedder()
        if embedder is None:
            return
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        self._vectors.update(zip(missing, embed_all(embedder, missing), strict=True))

    def embed(self, texts: Sequence[str]) -> list[Any] | None:
        """Vectors for texts (None when embeddings are off). Call outside transactions."""
        if self.ctx.load_embedder() is None:
            return None
        self.prefetch(texts)
        return [self._vectors[t] for t in texts]

    def save_vectors(self, rows: Iterable[tuple[int, str, Any]]) -> None:
        """Store (node id, kind, vector) rows. Call inside the unit's transaction."""
        placed = [(nid, self.space, kind, vec) for nid, kind, vec in rows if vec is not None]
        if not placed:
            return
        dim = len(placed[0][3])
        self.store.ensure_vectors(dim)
        self.ctx.record_embedder(dim)
        self.store.put_vectors(placed)


class Unfit(Exception):
    """A unit's prompt does not fit the model's context window, or its reply was cut at the
    token limit: ask about less (see `halves`)."""


def halves(items: Sequence[T]) -> list[list[T]]:
    """Two halves of a unit that did not fit (one part when it cannot be split)."""
    middle = len(items) // 2
    return [list(items[:middle]), list(items[middle:])] if middle else [list(items)]


class Stage:
    """One stage within a run: its report, its own token counters, and its model access."""

    def __init__(self, job: Job, name: str) -> None:
        self.job = job
        self.name = name
        self.report = StageReport(name)
        self.usage = Usage()
        inner = job.chat_model
        self.chat = CachedChat(inner, job.store, self.usage) if inner is not None else None
        self.started = time.perf_counter()
        self._lock = threading.Lock()  # replies are checked on worker threads

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


def segment_members(job: Job, segment_ids: Sequence[int]) -> dict[int, list[Node]]:
    """Each segment's turns (through PART_OF), in conversation order."""
    edges = job.store.edges_of(list(segment_ids), ["PART_OF"])
    nodes = job.store.nodes_by_ids(e.src for e in edges)
    members: dict[int, list[Node]] = {sid: [] for sid in segment_ids}
    for e in edges:
        if e.dst in members and e.src in nodes:
            members[e.dst].append(nodes[e.src])
    for turns in members.values():
        turns.sort(key=lambda n: (n.seq or 0, n.id))
    return members


def fold_node(stage: Stage, keep: int, drop: int, stage_mark: str | None = None) -> list[str]:
    """Move a twin's edges onto the node kept, delete the twin and keep its names as the
    kept node's aliases (one transaction; marked processed for `stage_mark` when given).
    Returns the kept node's aliases."""
    job = stage.job
    store = job.store
    nodes = store.nodes_by_ids([keep, drop])
    kept, dropped = nodes[keep], nodes[drop]
    rewired = []
    for e in store.edges_of([drop]):
        src = keep if e.src == drop else e.src
        dst = keep if e.dst == drop else e.dst
        if src != dst:
            rewired.append(Edge(src, dst, e.type, e.weight, e.props))
    names = {*kept.props.get("aliases", []), dropped.text, *dropped.props.get("aliases", [])}
    aliases = sorted(names - {kept.text})
    with store.transaction():
        stage.report.edges += store.add_edges(job.space, rewired)
        store.delete_nodes([drop])
        store.update_node(keep, props={**kept.props, "aliases": aliases})
        if stage_mark:
            store.mark_processed(job.space, stage_mark, [keep])
    return aliases


def parallel(fn: Callable[[Any], T], items: Sequence[Any], workers: int) -> list[T]:
    """fn over items on a small thread pool (in order); plain calls for one worker or item."""
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def day_of(node: Node) -> str:
    """A node's date as YYYY-MM-DD (with the time when there is one), or 'undated'."""
    if not node.timestamp:
        return "undated"
    stamp = node.timestamp.replace("T", " ")
    return stamp[:16] if len(stamp) >= 16 and stamp[11:16] != "00:00" else stamp[:10]


def turn_line(node: Node, date_hints: bool = False) -> str:
    """One turn as prompts show it: id, date, speaker and text (plus resolved dates)."""
    speaker = f"{node.speaker}: " if node.speaker else ""
    line = f"[{node.node_id}] ({day_of(node)}) {speaker}{node.text}"
    if date_hints:
        resolved = resolve_relative(node.text, node.timestamp)
        if resolved:
            line += "  {dates: " + "; ".join(f'"{e}" = {d}' for e, d in resolved) + "}"
    return line


def concept_ids(stage: Stage, labels: Sequence[str], source: str) -> dict[str, int]:
    """Ids for canonical labels, creating the missing concepts (call inside a transaction,
    after `prepare_labels` embedded the new ones)."""
    job = stage.job
    index = job.concepts
    out: dict[str, int] = {}
    for label in labels:
        found = index.lookup(label)
        if found is None:
            vectors = job.embed([label])
            found = index.create(job.store, job.space, label, source)
            job.save_vectors([(found, "concept", vectors[0] if vectors else None)])
            stage.report.nodes += 1
        out[label] = found
    return out


def prepare_labels(job: Job, labels: Sequence[str]) -> None:
    """Embed the labels that have no concept yet (before the unit's transaction)."""
    job.prefetch(sorted({lb for lb in labels if job.concepts.lookup(lb) is None}))


def entity_index(job: Job) -> EntityIndex:
    """The run's entity index (read from the store on first use)."""
    if job.entities is None:
        job.entities = EntityIndex(job.store, job.space)
    return job.entities


def case_stats(job: Job) -> CaseStats:
    """How the space writes each word (read once per run)."""
    if job.case_stats is None:
        job.case_stats = CaseStats.of(e.text for e in job.episodes())
    return job.case_stats
