"""Facts and concepts (GAAMA) from the turns of each segment.

The turns of a segment that the gate kept are asked about in groups that fit the window
(prompts/extract.md, `memcli.consolidate.extract`: the same requests give the `entities`
stage its entities and triplets), with their dates (and relative date expressions already
resolved by rule); the reply is asked for at most as many facts as its tokens carry. The
reply's facts become `fact` nodes (status active, belief, `valid_from` when dated) with
DERIVED_FROM edges to the turns the reply cites; a fact whose cited ids were all invented
is dropped, and so is one that repeats a stored fact similar to the turns. Its concepts
get canonical labels (see `concepts`), ABOUT_CONCEPT edges from facts and HAS_CONCEPT
edges from the turns it cites and their segments. A fact whose text is already stored
gains provenance instead of a twin. Unit of work: one group of turns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memcli.consolidate.concepts import concept_ids, mentions, prepare_labels
from memcli.consolidate.extract import ask, chunks, groups
from memcli.consolidate.lines import turn_line
from memcli.consolidate.nearest import mean_vector, similar
from memcli.consolidate.quality import Sieve, personal
from memcli.consolidate.schemas import ExtractReply
from memcli.consolidate.stage import Stage, Unfit
from memcli.dates import first_day, partial_date
from memcli.models import Edge, Node
from memcli.text import one_line, words

__all__ = ["chunks", "fact_key", "run", "unit"]

#: Words a claim takes at least (someone, a verb, what): a shorter "fact" (a bare name) says
#: nothing, and merged with its twins it came to cite a dozen turns, each ranked with it.
MIN_CLAIM_WORDS = 3


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


def _known_facts(stage: Stage, chunk: Sequence[Node]) -> list[str]:
    """Texts of the stored facts most similar to a group of turns (a new fact that nearly
    repeats one is a duplicate)."""
    job = stage.job
    vectors = job.store.get_vectors([e.id for e in chunk])
    centre = mean_vector(list(vectors.values()))
    text = " ".join(e.text for e in chunk)
    ids = similar(job, centre, text, ["fact"], 2 * job.cfg.similar_context_k)
    found = job.store.nodes_by_ids(ids)
    return [found[i].text for i in ids if i in found]


def _plan(stage: Stage, reply: ExtractReply, chunk: Sequence[Node], known: list[str]) -> _Plan:
    """Check the reply against the prompt: invented ids dropped, weak facts dropped
    (memcli.consolidate.quality), labels canonical; a fact's turns tagged with its labels."""
    index = stage.job.concepts
    plan = _Plan()
    allowed = {e.node_id: e.id for e in chunk}
    by_id = {e.id: e for e in chunk}
    sieve = Sieve(known)
    for item in reply.facts:
        sources = stage.known_ids(item.sources, allowed)
        text = one_line(item.text)
        if not sources or not text:
            stage.count("unsupported_facts", 1)
            continue
        if personal(text):  # "I", "you": not self-contained, most often a turn said again
            stage.count("dropped_personal", 1)
            continue
        if len(words(text)) < MIN_CLAIM_WORDS:  # "Gina": a name, no claim about it
            stage.count("dropped_no_claim", 1)
            continue
        # Turn lines carry the speaker, the date and the dates relative words meant.
        dropped = sieve.reason(text, [turn_line(by_id[i], date_hints=True) for i in sources])
        if dropped:
            stage.count(dropped, 1)
            continue
        labels = [lb for lb in (index.label(c) for c in item.concepts) if lb]
        date = partial_date(item.date)
        plan.facts.append(_Fact(text, fact_key(text), item.belief, sources, labels, date))
        for label in labels:
            tagged = plan.tagged.setdefault(label, [])
            tagged.extend(t for t in sources if t not in tagged)
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
    """Extract and store the facts and concepts of one group of turns; a group too large
    for the model (prompt or reply) is split in halves, a single turn given up."""
    try:
        reply = ask(stage, chunk)
    except Unfit:
        stage.split("facts", chunk, lambda part: unit(stage, part), lambda n: n.id)
        return
    if reply is None:  # counted; pending for a later run, or given up after a few
        stage.failed("facts", [e.id for e in chunk])
        return
    _write(stage, chunk, _plan(stage, reply, chunk, _known_facts(stage, chunk)))


def run(stage: Stage) -> None:
    """Facts for every consolidated turn not yet read by the extractor."""
    job = stage.job
    store = job.store
    todo = store.unprocessed(job.space, "facts")
    segmented = store.processed_among("segment", todo)
    pending = {i for i in todo if i in segmented}
    segments = sorted({e.dst for e in store.edges_of(sorted(pending), ["PART_OF"])})
    units: list[list[Node]] = []
    for turns in job.segment_members(segments).values():
        units += groups(stage, [t for t in turns if t.id in pending])
    job.progress.start("extracting facts", len(units))
    for chunk in units:
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
