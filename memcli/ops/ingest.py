"""`memcli ingest`: conversation turns stored verbatim, chained, indexed and embedded."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from memcli.errors import InvalidInput
from memcli.llm.embedder import embed_all
from memcli.models import BadRecord, Edge, Episode, IngestReport, Turn, turn_embedding_text
from memcli.progress import NoProgress, Progress
from memcli.timeexpr import time_refs

if TYPE_CHECKING:
    from memcli.ops.base import MemoryBase
    from memcli.readers import Limits, Opener, Source


@dataclass
class _Plan:
    """One source file after reading and de-duplication, ready to be written."""

    source: Source
    episodes: list[Episode]
    keys: list[str]
    new_index: list[int] = field(default_factory=list)  # positions of not-yet-stored episodes
    invalid: int = 0
    forgotten: set[str] = field(default_factory=set)  # keys of turns pruned earlier


def episode_key(ep: Episode, occurrence: int) -> str:
    """Content identity of a turn: same session, ref, speaker, time and words = same episode."""
    parts = [ep.session, ep.ref, ep.speaker, ep.timestamp_raw, ep.text, occurrence]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()[:32]


def read_limits(mem: MemoryBase) -> Limits:
    """How much of an input is held at once, from the `ingest` settings."""
    from memcli.readers import Limits

    settings = mem.cfg.ingest
    return Limits(settings.max_message_bytes, settings.max_document_bytes)


def _read_all(
    mem: MemoryBase, paths: Sequence[str], options: IngestOptions, stdin: BinaryIO | None
) -> list[_Plan]:
    """Read and validate every input before anything is written."""
    from memcli.readers import read_source

    limits = read_limits(mem)
    skip_invalid = options.skip_invalid
    sources = [
        read_source(p, options.fmt, stdin, skip_invalid=skip_invalid, limits=limits,
                    opener=options.opener)
        for p in paths
    ]  # fmt: skip
    return plan_sources(sources, skip_invalid)


def plan_sources(sources: Sequence[Source], skip_invalid: bool = False) -> list[_Plan]:
    """Each source's episodes with their content keys; InvalidInput for bad records unless
    `skip_invalid`."""
    plans: list[_Plan] = []
    problems: list[str] = []  # those kept (memcli.readers.MAX_BAD_KEPT a file)
    for source in sources:
        bad = [r for r in source.records if isinstance(r, BadRecord)]
        problems.extend(f"{source.name}:{r.line}: {r.reason}" for r in bad)
        episodes = [r for r in source.records if isinstance(r, Episode)]
        seen: Counter[tuple[Any, ...]] = Counter()
        keys = []
        for ep in episodes:
            ident = (ep.session, ep.ref, ep.speaker, ep.timestamp_raw, ep.text)
            keys.append(episode_key(ep, seen[ident]))
            seen[ident] += 1
        plans.append(_Plan(source, episodes, keys, invalid=source.invalid))
    if problems and not skip_invalid:
        total = sum(p.invalid for p in plans)
        raise InvalidInput(problems, fix=_bad_records_fix(plans), total=total)
    return plans


_OVER_LIMIT = re.compile(r"is \d+ bytes, over the .+ limit$")


def _bad_records_fix(plans: Sequence[_Plan]) -> str:
    """How to get past bad records; when not one record of a file could be read, its
    format is the likelier mistake (and --skip-invalid would store nothing of it) unless
    they were too long."""
    too_long = any(
        _OVER_LIMIT.search(r.reason)
        for p in plans
        for r in p.source.records
        if isinstance(r, BadRecord)
    )
    if too_long:
        return (
            "raise ingest.max_message_bytes (in the config file, or the environment "
            "variable MEMCLI_INGEST_MAX_MESSAGE_BYTES) above the longest message, or pass "
            "--skip-invalid to store the other records without it"
        )
    unread = next((p.source for p in plans if p.invalid and not p.episodes), None)
    if unread is None:
        return "fix the records, or pass --skip-invalid to store the valid ones and skip the rest"
    from memcli.readers import FORMATS

    return (
        f"not one record of {unread.name} reads as {unread.format}: if it is another "
        f"format, pass --format one of {', '.join(sorted(FORMATS))} (or leave --format out "
        "to detect it); otherwise fix the records"
    )


def _embed_plan(mem: MemoryBase, plan: _Plan, progress: Progress) -> tuple[list[Any], float]:
    """Vectors for the plan's new episodes (None entries when embeddings are off), and the
    seconds it took."""
    embedder = mem.embedder
    if embedder is None or not plan.new_index:
        return [None] * len(plan.new_index), 0.0
    befores = _turns_before(mem, plan)
    texts = [
        turn_embedding_text(plan.episodes[i].text, plan.episodes[i].speaker, befores[i])
        for i in plan.new_index
    ]
    started = time.perf_counter()
    vectors = embed_all(embedder, texts, progress.advance)
    return vectors, time.perf_counter() - started


def _turns_before(mem: MemoryBase, plan: _Plan) -> dict[int, Turn | None]:
    """The turn before each of the plan's new episodes in its session: the plan's previous
    episode of that session, else the session's last stored turn (where it will follow)."""
    last: dict[str, Turn | None] = {}
    out: dict[int, Turn | None] = {}
    new = set(plan.new_index)
    for i, ep in enumerate(plan.episodes):
        session = ep.session or "default"
        if session not in last and i in new:
            tail = mem.store.session_tail(mem.space, session)
            node = mem.store.nodes_by_ids([tail[0]]).get(tail[0]) if tail else None
            last[session] = (node.text, node.speaker) if node is not None else None
        out[i] = last.get(session)
        last[session] = (ep.text, ep.speaker)
    return out


def _episode_row(ep: Episode, key: str, session: str, seq: int) -> dict[str, Any]:
    """The node row of one episode, at position `seq` of its session."""
    props = dict(ep.props)
    if ep.timestamp_raw and ep.timestamp_raw != ep.timestamp:
        props["timestamp_raw"] = ep.timestamp_raw
    refs = time_refs(ep.text, ep.timestamp)  # "yesterday" -> the date it meant
    if refs:
        props["time_refs"] = refs
    return {
        "text": ep.text,
        "speaker": ep.speaker,
        "session": session,
        "seq": seq,
        "timestamp": ep.timestamp,
        "ref": ep.ref,
        "key": key,
        "props": props,
    }


def _insert_episodes(
    mem: MemoryBase, plan: _Plan, vectors: list[Any], skip: set[str]
) -> tuple[int, set[str]]:
    """Insert the plan's new episodes in order, chaining each session with NEXT edges."""
    store, space = mem.store, mem.space
    chain: dict[str, int] = {}  # session -> row id of its last stored turn
    seqs: dict[str, int] = {}  # session -> seq of its last turn so far
    rows: list[dict[str, Any]] = []
    kept: list[Any] = []
    for i, vec in zip(plan.new_index, vectors, strict=True):
        ep, key = plan.episodes[i], plan.keys[i]
        if key in skip:
            continue
        session = ep.session or "default"
        if session not in seqs:
            tail = store.session_tail(space, session)
            if tail:
                chain[session] = tail[0]
            seqs[session] = tail[1] if tail else -1
        seqs[session] += 1
        rows.append(_episode_row(ep, key, session, seqs[session]))
        kept.append(vec)
    ids = store.insert_nodes(space, "episode", rows)
    edges: list[Edge] = []
    for node_id, row in zip(ids, rows, strict=True):
        if row["session"] in chain:
            edges.append(Edge(chain[row["session"]], node_id, "NEXT"))
        chain[row["session"]] = node_id
    store.add_edges(space, edges)
    store.put_vectors(
        (node_id, space, "episode", vec)
        for node_id, vec in zip(ids, kept, strict=True)
        if vec is not None
    )
    return len(ids), set(seqs)


@dataclass
class _Written:
    """What writing one file stored."""

    inserted: int = 0
    sessions: set[str] = field(default_factory=set)
    restored: int = 0  # turns forgotten earlier and let back in (allow_forgotten)


def _write(mem: MemoryBase, plan: _Plan, vectors: list[Any], allow_forgotten: bool) -> _Written:
    """Write one file's new episodes, its source row and provenance links atomically."""
    store, space = mem.store, mem.space
    with store.transaction():
        # Another process may have stored (or forgotten) some of them since we looked.
        fresh = [plan.keys[i] for i in plan.new_index]
        skip = store.existing_keys(space, "episode", fresh)
        if not allow_forgotten:
            plan.forgotten |= store.forgotten_keys(space, fresh) - skip
            skip |= plan.forgotten
        todo = [k for k in fresh if k not in skip]
        if not todo and not store.existing_keys(space, "episode", plan.keys):
            return _Written()  # nothing of the file is or will be stored: no source row
        existing = store.source_by_sha(space, plan.source.sha256)
        source_id = (
            existing[0]
            if existing
            else store.insert_source(
                space, plan.source.name, plan.source.sha256, plan.source.format, len(plan.episodes)
            )
        )
        dim = len(vectors[0]) if vectors and vectors[0] is not None else None
        if dim:
            store.ensure_vectors(dim)
        mem.record_embedder(dim)
        inserted, sessions = _insert_episodes(mem, plan, vectors, skip)
        store.link_sources(
            (nid, source_id) for nid in store.ids_for_keys(space, "episode", plan.keys)
        )
        restored = store.allow_again(space, todo) if allow_forgotten else 0
    return _Written(inserted, sessions, restored)


@dataclass(frozen=True)
class IngestOptions:
    """How an ingest reads and stores: `fmt` names the input format (None: detected from
    the suffix and content), `skip_invalid` stores a file's valid records beside bad ones,
    `allow_forgotten` lets turns that `prune` forgot back in, `opener` opens a named file
    (None: by name; the MCP server passes its own)."""

    fmt: str | None = None
    skip_invalid: bool = False
    allow_forgotten: bool = False
    opener: Opener | None = None


def ingest(
    mem: MemoryBase,
    paths: Sequence[str],
    options: IngestOptions,
    *,
    stdin: BinaryIO | None = None,
    progress: Progress | None = None,
) -> IngestReport:
    """Store every turn of the given files (`-` = stdin) as episodes; idempotent. A turn
    that `prune` forgot is skipped, unless `options.allow_forgotten` lets it back."""
    started = time.perf_counter()
    mem.check_embedder()
    plans = _read_all(mem, paths, options, stdin)
    return store_plans(mem, plans, progress or NoProgress(), started, options.allow_forgotten)


def _plan_new(mem: MemoryBase, plan: _Plan, allow_forgotten: bool) -> None:
    """Find the plan's turns the space does not hold, and those among them it forgot."""
    store, space = mem.store, mem.space
    present = store.existing_keys(space, "episode", plan.keys)
    plan.forgotten = store.forgotten_keys(space, [k for k in plan.keys if k not in present])
    skip = present if allow_forgotten else present | plan.forgotten
    plan.new_index = [i for i, k in enumerate(plan.keys) if k not in skip]


def _mask_secrets(plans: list[_Plan]) -> int:
    """Replace credentials in the new turns' text and string props by their marks
    (memcli.ops.redact); the content keys stay those of the text as read, so the setting does
    not change which turns count as already stored. Returns how many were masked."""
    from memcli.ops.redact import mask_secrets

    total = 0
    for plan in plans:
        for ep in (plan.episodes[i] for i in plan.new_index):
            ep.text, count = mask_secrets(ep.text)
            total += count
            for key, value in ep.props.items():
                if isinstance(value, str):
                    ep.props[key], count = mask_secrets(value)
                    total += count
    return total


def store_plans(
    mem: MemoryBase,
    plans: list[_Plan],
    progress: Progress,
    started: float,
    allow_forgotten: bool = False,
) -> IngestReport:
    """Embed and write the planned sources' new episodes, one transaction per source."""
    report = IngestReport(files=[p.source.name for p in plans])
    for plan in plans:
        _plan_new(mem, plan, allow_forgotten)
        report.invalid += plan.invalid
        report.warnings += plan.source.warnings
    if mem.cfg.ingest.mask_secrets:
        report.secrets_masked = _mask_secrets(plans)
    total = sum(len(p.new_index) for p in plans)
    mem.choose_embedding(p.episodes[i].text for p in plans for i in p.new_index)
    shown = mem.embedder is not None and total > 0
    if shown:
        progress.start("embedding turns", total)
    sessions: set[str] = set()
    # File by file, each embedded then committed: work cut short (Ctrl-C, a model server
    # gone) keeps the files before it, and running the same command again does the rest.
    for plan in plans:
        if not plan.source.records:  # an empty file leaves no trace
            continue
        vectors, seconds = _embed_plan(mem, plan, progress)
        report.embed_seconds += seconds
        written = _write(mem, plan, vectors, allow_forgotten)
        forgotten = 0 if allow_forgotten else sum(k in plan.forgotten for k in plan.keys)
        report.new += written.inserted
        report.forgotten += forgotten
        report.restored += written.restored
        report.skipped += len(plan.episodes) - written.inserted - forgotten
        sessions |= written.sessions
    if shown:
        progress.finish()
    report.sessions = len(sessions)
    report.seconds = time.perf_counter() - started
    return report
