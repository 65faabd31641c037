"""Facts and concepts (GAAMA) from chunks of consolidated turns.

Turns already in a segment are taken in conversation order, in chunks of about
`chunk_tokens` within one session, and at most `TURNS_SHARE` of what the model's window
leaves the data. Each chunk is sent with its turns' dates (and relative date expressions
already resolved by rule), then as many as fit of the similar older turns, the existing
facts and the concepts closest to it, so the context is trimmed before a chunk's turns are
split; the reply is asked for at most as many facts as the reply's tokens can carry. The
reply's facts become `fact` nodes (status active, belief, `valid_from` when dated) with
DERIVED_FROM edges to the turns the reply cites; a fact whose cited ids were all invented
is dropped. Its concepts get canonical labels (see
`concepts`), ABOUT_CONCEPT edges from facts and HAS_CONCEPT edges from turns and their
segments. A fact whose text is already stored gains provenance instead of a twin. Unit of
work: one chunk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memcli.consolidate.buffer import session_order, turn_tokens
from memcli.consolidate.concepts import concept_ids, mentions, prepare_labels
from memcli.consolidate.lines import turn_line
from memcli.consolidate.nearest import mean_vector, similar
from memcli.consolidate.quality import Sieve
from memcli.consolidate.schemas import FactsReply
from memcli.consolidate.stage import Stage, Unfit
from memcli.dates import first_day, partial_date
from memcli.models import Edge, Node
from memcli.prompting import data_block
from memcli.text import count_tokens, one_line

MAX_CONCEPTS_SHOWN = 30
#: Share of a facts prompt's room for data that a chunk's new turns may take; the context
#: (older turns, stored facts, concepts) gets what they leave.
TURNS_SHARE = 0.65
#: Reply tokens one fact takes with its concept entry, JSON included (SmolLM2's tokenizer
#: makes about 55 of a dated fact and 20 of a concept), and the reply's own brackets.
FACT_REPLY_TOKENS = 75
REPLY_OVERHEAD = 10
_NONE = data_block("(none)")


@dataclass
class _Fact:
    text: str
    key: str
    belief: float
    sources: list[int]
    labels: list[str]
    date: str | None


@dataclass
class _Plan:
    facts: list[_Fact] = field(default_factory=list)
    tagged: dict[str, list[int]] = field(default_factory=dict)  # concept -> turn ids


def fact_key(text: str) -> str:
    """Content identity of a claim: the same words (case, spacing, final stop aside)."""
    norm = one_line(text.lower()).rstrip(".! ")
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:32]


def chunks(
    episodes: Sequence[Node], budget: int, size: Callable[[Node], int] = turn_tokens
) -> list[list[Node]]:
    """Turns grouped per session, in conversation order, about `budget` tokens each (a
    turn's tokens by `size`)."""
    order = {s: i for i, s in enumerate(session_order(episodes))}
    ordered = sorted(episodes, key=lambda e: (order[e.session or ""], e.seq or 0, e.id))
    out: list[list[Node]] = []
    used = 0
    for ep in ordered:
        tokens = size(ep)
        if out and out[-1][-1].session == ep.session and used + tokens <= budget:
            out[-1].append(ep)
            used += tokens
        else:
            out.append([ep])
            used = tokens
    return out


@dataclass
class _Shown:
    """What a chunk's prompt showed: the turns a reply may cite (by public id), and the
    stored facts (for duplicates)."""

    turns: dict[str, Node]
    facts: list[str]

    @property
    def allowed(self) -> dict[str, int]:
        """Public id -> row id of the turns a reply may cite."""
        return {key: node.id for key, node in self.turns.items()}


def max_facts(stage: Stage, chunk: Sequence[Node]) -> int:
    """How many facts a chunk's reply is asked for at most: as many as the reply's tokens
    carry (a reply cut at its limit is thrown away whole), never more than its turns."""
    reply = stage.reply_room()
    if reply is None:
        return len(chunk)
    return max(1, min(len(chunk), (reply - REPLY_OVERHEAD) // FACT_REPLY_TOKENS))


def turn_budget(stage: Stage) -> int:
    """Estimated tokens of new turns per chunk: `chunk_tokens`, and no more than their share
    of the room the window leaves for data."""
    cap = stage.job.cfg.chunk_tokens
    empty = dict.fromkeys(("new_turns", "older_turns", "known_facts", "known_concepts"), _NONE)
    room = stage.data_room("facts", **empty, max_facts="9")
    return cap if room is None else max(1, min(cap, int(room * TURNS_SHARE)))


def _fitting(lines: Sequence[str], room: int, sep: int = 1) -> int:
    """How many of `lines`, taken in order, fit in `room` estimated tokens."""
    used = 0
    for n, line in enumerate(lines):
        used += count_tokens(line) + sep
        if used > room:
            return n
    return len(lines)


def _line_tokens(turn: Node) -> int:
    """Estimated tokens of a new turn as the facts prompt shows it."""
    return count_tokens(turn_line(turn, date_hints=True)) + 1


def _block(lines: Sequence[str], sep: str) -> str:
    return data_block(sep.join(lines)) if lines else _NONE


def _context(stage: Stage, chunk: Sequence[Node]) -> tuple[dict[str, str], _Shown]:
    """Prompt values for a chunk, and what the prompt showed: the new turns whole, then as
    many of the older turns, stored facts and concepts (each best first) as the window
    leaves room for."""
    job = stage.job
    store, k = job.store, job.cfg.similar_context_k
    vectors = store.get_vectors([e.id for e in chunk])
    centre = mean_vector(list(vectors.values()))
    text = " ".join(e.text for e in chunk)
    ids = [e.id for e in chunk]
    older_ids = similar(job, centre, text, ["episode"], k, exclude=ids, before=min(ids))
    fact_ids = similar(job, centre, text, ["fact"], 2 * k)
    concept_ids_ = similar(job, centre, text, ["concept"], MAX_CONCEPTS_SHOWN)
    found = store.nodes_by_ids([*older_ids, *fact_ids, *concept_ids_])
    older = [found[i] for i in older_ids if i in found]
    known_facts = [found[i] for i in fact_ids if i in found]
    labels = [found[i].text for i in concept_ids_ if i in found]
    values = {
        "new_turns": data_block("\n".join(turn_line(e, date_hints=True) for e in chunk)),
        "max_facts": str(max_facts(stage, chunk)),
    }
    empty = dict.fromkeys(("older_turns", "known_facts", "known_concepts"), _NONE)
    room = stage.data_room("facts", **values, **empty)
    if room is not None:
        older = older[: _fitting([turn_line(e) for e in older], room)]
        room -= sum(count_tokens(turn_line(e)) + 1 for e in older)
        known_facts = known_facts[: _fitting([f"- {f.text}" for f in known_facts], room)]
        room -= sum(count_tokens(f"- {f.text}") + 1 for f in known_facts)
        labels = labels[: _fitting(labels, room)]
    older.sort(key=lambda n: n.id)
    values |= {
        "older_turns": _block([turn_line(e) for e in older], "\n"),
        "known_facts": _block([f"- {f.text}" for f in known_facts], "\n"),
        "known_concepts": _block(sorted(labels), ", "),
    }
    shown = _Shown({e.node_id: e for e in [*chunk, *older]}, [f.text for f in known_facts])
    return values, shown


def _plan(stage: Stage, reply: FactsReply, shown: _Shown) -> _Plan:
    """Check the reply against the prompt: invented ids dropped, weak facts dropped
    (memcli.consolidate.quality), labels canonical."""
    index = stage.job.concepts
    plan = _Plan()
    allowed = shown.allowed
    by_id = {node.id: node for node in shown.turns.values()}
    sieve = Sieve(shown.facts)
    for item in reply.facts:
        sources = stage.known_ids(item.sources, allowed)
        text = one_line(item.text)
        if not sources or not text:
            stage.count("unsupported_facts", 1)
            continue
        # Turn lines carry the speaker, the date and the dates relative words meant.
        dropped = sieve.reason(text, [turn_line(by_id[i], date_hints=True) for i in sources])
        if dropped:
            stage.count(dropped, 1)
            continue
        labels = [lb for lb in (index.label(c) for c in item.concepts) if lb]
        date = partial_date(item.date)
        plan.facts.append(_Fact(text, fact_key(text), item.belief, sources, labels, date))
    for concept in reply.concepts:
        label = index.label(concept.label)
        turns = stage.known_ids(concept.episodes, allowed)
        if label and turns:
            plan.tagged.setdefault(label, [])
            plan.tagged[label].extend(t for t in turns if t not in plan.tagged[label])
    return plan


def _insert_fact(stage: Stage, fact: _Fact, sources: dict[int, Node], vec: Any) -> int:
    job = stage.job
    first = sources.get(fact.sources[0])
    timestamp = first_day(fact.date) if fact.date else (first.timestamp if first else None)
    props = {"valid_from": fact.date} if fact.date else {}
    fid = job.store.insert_node(
        job.space, "fact", fact.text, session=first.session if first else None,
        timestamp=timestamp, belief=fact.belief, status="active", key=fact.key, props=props,
    )  # fmt: skip
    job.save_vectors([(fid, "fact", vec)])
    stage.report.nodes += 1
    return fid


def _write(stage: Stage, chunk: Sequence[Node], plan: _Plan) -> None:
    job = stage.job
    store = job.store
    existing = set(store.existing_keys(job.space, "fact", [f.key for f in plan.facts]))
    fresh = {f.key: f for f in plan.facts if f.key not in existing}
    embedded = job.embed([f.text for f in fresh.values()]) or [None] * len(fresh)
    vectors = dict(zip(fresh, embedded, strict=True))
    labels = sorted({lb for f in plan.facts for lb in f.labels} | set(plan.tagged))
    new = [lb for lb in labels if job.concepts.lookup(lb) is None]
    prepare_labels(job, labels)
    sources = store.nodes_by_ids({s for f in plan.facts for s in f.sources})
    with store.transaction():
        keyed = _ids_by_key(store, job.space, existing)
        concepts = concept_ids(stage, labels, "llm")
        edges: list[Edge] = []
        for fact in plan.facts:
            if fact.key not in keyed:
                keyed[fact.key] = _insert_fact(stage, fact, sources, vectors.get(fact.key))
            fid = keyed[fact.key]
            edges += [Edge(fid, s, "DERIVED_FROM") for s in fact.sources]
            edges += [Edge(fid, concepts[lb], "ABOUT_CONCEPT") for lb in fact.labels]
        for label, turns in plan.tagged.items():
            edges += [Edge(t, concepts[label], "HAS_CONCEPT") for t in turns]
            edges += [Edge(g, concepts[label], "HAS_CONCEPT") for g in _segments(store, turns)]
        for label in new:
            edges += [Edge(i, concepts[label], "HAS_CONCEPT") for i in mentions(job, label)]
        stage.report.edges += store.add_edges(job.space, edges)
        store.mark_processed(job.space, "facts", [e.id for e in chunk])
    stage.report.items += 1


def _segments(store: Any, turns: Sequence[int]) -> list[int]:
    """The segments these turns are part of (a concept tags a turn's topic too)."""
    return sorted({e.dst for e in store.edges_of(list(turns), ["PART_OF"])})


def _ids_by_key(store: Any, space: str, keys: set[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for key in sorted(keys):
        found = store.ids_for_keys(space, "fact", [key])
        if found:
            out[key] = found[0]
    return out


def unit(stage: Stage, chunk: Sequence[Node]) -> None:
    """Extract and store the facts and concepts of one chunk of turns; a chunk too large
    for the model (prompt or reply) is split in halves, a single turn given up."""
    values, shown = _context(stage, chunk)
    try:
        reply = stage.ask(stage.prompt("facts", **values), FactsReply)
    except Unfit:
        stage.split("facts", chunk, lambda part: unit(stage, part), lambda n: n.id)
        return
    if reply is None:  # counted; pending for a later run, or given up after a few
        stage.failed("facts", [e.id for e in chunk])
        return
    _write(stage, chunk, _plan(stage, reply, shown))


def run(stage: Stage) -> None:
    """Facts for every consolidated turn not yet read by the extractor."""
    job = stage.job
    store = job.store
    todo = store.unprocessed(job.space, "facts")
    segmented = store.processed_among("segment", todo)
    nodes = store.nodes_by_ids(i for i in todo if i in segmented)
    groups = chunks(list(nodes.values()), turn_budget(stage), _line_tokens)
    job.progress.start("extracting facts", len(groups))
    for chunk in groups:
        if not stage.budget_left():
            stage.report.reason = "stopped by --limit"
            break
        unit(stage, chunk)
        job.progress.advance()
    job.progress.finish()
    left = store.unprocessed(job.space, "facts")
    stage.report.pending = len(left)
    waiting = len(left) - len(store.processed_among("segment", left))
    if waiting and not stage.report.reason:
        stage.report.reason = f"{waiting} turns wait in open buffers"
