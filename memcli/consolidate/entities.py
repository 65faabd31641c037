"""The `entities` stage: named things with turn provenance (MemORAI, PersonalAI).

Unit of work: one topic segment, committed with its `processed` mark.

1. Rules first, always (`names`): the named things each turn of the segment writes become
   entity nodes (canonical key, type, aliases) with a MENTIONS edge from the turn; a value
   written right after a name (a version, an amount) is kept on that edge.
2. With an LLM, for a segment the gate kept (`gate`): the entities' descriptions and the
   segment's (subject, predicate, object) triplets, each citing its turns
   (`entity_llm`), from the replies the `facts` stage was given for the same turns.
   Triplets become RELATION edges between entities, carrying predicate and
   source turns; descriptions are kept on the entity and embedded with its name.
3. New facts get MENTIONS edges to the entities they name.
4. New entities are merged into their twins (`entity_index`): the edges move to the entity
   kept, the other name becomes an alias.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memcli.consolidate import entity_llm, gate
from memcli.consolidate.entity_index import EntityRecord
from memcli.consolidate.entity_merge import merge_new, refresh_profiles
from memcli.consolidate.names import Found, mentions
from memcli.models import Edge, Node

if TYPE_CHECKING:
    from memcli.consolidate.entity_llm import Extraction
    from memcli.consolidate.job import Job
    from memcli.consolidate.stage import Stage


def found_in(job: Job, nodes: Sequence[Node]) -> Found:
    """The named things the rules find in some nodes' texts."""
    stats = job.case_stats
    found = Found()
    for node in nodes:
        said = job.mentions.get(node.text)
        if said is None:  # a segment's turns were read already by the run's first pass
            said = job.mentions[node.text] = mentions(node.text, stats)
        for mention in said:
            found.add(node.id, mention)
    return found


def _new_names(job: Job, found: Found) -> list[str]:
    index = job.entities
    return [name for key, (name, _) in found.names.items() if index.lookup(name) is None]


def entity_ids(stage: Stage, found: Found, source: str) -> dict[str, int]:
    """key -> entity id for every name found, creating missing entities (in a transaction,
    after their names were embedded)."""
    job = stage.job
    index = job.entities
    out: dict[str, int] = {}
    for key, (name, kind) in found.names.items():
        eid = index.lookup(name)
        if eid is None:
            vectors = job.embed([name])
            eid = job.store.insert_node(
                job.space, "entity", name, key=key,
                props={"type": kind, "aliases": [], "source": source},
            )  # fmt: skip
            job.save_vectors([(eid, "entity", vectors[0] if vectors else None)])
            index.add(EntityRecord(eid, key, name, kind))
            stage.report.nodes += 1
        out[key] = eid
    return out


def mention_edges(found: Found, ids: dict[str, int]) -> list[Edge]:
    """MENTIONS edges from each node to the entities it names (values on the edge)."""
    edges = []
    for node, keys in found.said.items():
        for key, values in keys.items():
            props: dict[str, Any] = {"values": values} if values else {}
            said = found.statements.get(node, {}).get(key)
            if said:
                props["statements"] = said
            edges.append(Edge(node, ids[key], "MENTIONS", 1.0, props))
    return edges


def segment_unit(
    stage: Stage, segment: Node, members: Sequence[Node], extraction: Extraction | None
) -> None:
    """One segment's entities and mentions (and its LLM extraction, when given)."""
    job = stage.job
    found = found_in(job, members)
    if extraction is not None:
        extraction.add_names(found)
    job.prefetch(_new_names(job, found))
    if extraction is not None:
        extraction.prefetch(job)
    with job.store.transaction():
        ids = entity_ids(stage, found, "rule" if extraction is None else "llm")
        edges = mention_edges(found, ids)
        if extraction is not None:
            edges += extraction.write(stage, ids)
        stage.report.edges += job.store.add_edges(job.space, edges)
        job.store.mark_processed(job.space, "entities", [segment.id])
    stage.report.items += 1


def link_facts(stage: Stage) -> None:
    """MENTIONS edges from new facts to the entities their text names."""
    job = stage.job
    store = job.store
    todo = store.unprocessed(job.space, "entities", kind="fact")
    if not todo:
        return
    facts = list(store.nodes_by_ids(todo).values())
    found = found_in(job, facts)
    index = job.entities
    for fact in facts:  # names already known, however the fact writes them
        for eid, key in index.keys_in(fact.text).items():
            rec = index.records[eid]
            found.names.setdefault(key, (rec.name, rec.kind))
            found.said.setdefault(fact.id, {}).setdefault(key, [])
    job.prefetch(_new_names(job, found))
    with store.transaction():
        ids = entity_ids(stage, found, "rule")
        stage.report.edges += store.add_edges(job.space, mention_edges(found, ids))
        store.mark_processed(job.space, "entities", todo)
    stage.count("facts_linked", len(todo))


def run(stage: Stage) -> None:
    """Entities for new segments (rules, then the LLM), facts linked, twins merged."""
    job = stage.job
    store = job.store
    todo = store.unprocessed(job.space, "entities", kind="segment")
    segments = store.nodes_by_ids(todo)
    members = job.segment_members(todo)
    if stage.chat is None:  # every new name embedded in one go
        job.prefetch(_new_names(job, found_in(job, [e for m in members.values() for e in m])))
    kept = gate.keeper(job) if stage.chat is not None else (lambda turn: True)
    job.progress.start("finding entities", len(todo))
    batch_size = max(1, job.concurrency) * 2
    for start in range(0, len(todo), batch_size):
        batch = [sid for sid in todo[start : start + batch_size] if sid in segments]
        if job.limit is not None:  # a segment may cost several failed requests
            batch = batch[: max(0, job.limit - stage.units_spent())]
        if not batch:
            stage.report.reason = "stopped by --limit"
            break
        extractions = entity_llm.extract(stage, [(segments[s], members[s]) for s in batch], kept)
        for sid, extraction in zip(batch, extractions, strict=True):
            if extraction is entity_llm.FAILED:  # counted; pending for a later run ...
                if not stage.failed("entities", [sid], give_up=False):
                    continue
                stage.count("given_up_invalid", 1)  # ... or, after a few, the rules alone
                extraction = None
            segment_unit(stage, segments[sid], members[sid], extraction)
            job.progress.advance()
    job.progress.finish()
    link_facts(stage)
    touched = store.unprocessed(job.space, "entities", kind="entity")
    stage.count("merged", merge_new(stage))
    refresh_profiles(stage, [i for i in touched if i in job.entities.records])
    stage.report.pending = len(store.unprocessed(job.space, "entities", kind="segment"))
