"""Reflections (GAAMA): higher-level observations drawn from several facts.

New facts are taken in batches of `reflect_batch`, oldest first. Each batch is sent with
the existing facts and reflections closest to it; a reply's reflection must cite at least
one fact id that the prompt showed (others are dropped) and gets DERIVED_FROM_FACT edges
to them. A reflection already stored with the same words gains the new support instead of
a twin. Unit of work: one batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcli.consolidate.facts import fact_key
from memcli.consolidate.lines import day_of
from memcli.consolidate.nearest import mean_vector, similar
from memcli.consolidate.quality import GROUNDED_REFLECTION, Sieve
from memcli.consolidate.schemas import ReflectionsReply
from memcli.consolidate.stage import Stage, Unfit
from memcli.models import Edge, Node
from memcli.prompting import data_block
from memcli.text import one_line


def fact_line(fact: Node) -> str:
    """A fact as prompts show it: id, date, text and belief."""
    belief = f" (belief {fact.belief:.2f})" if fact.belief is not None else ""
    return f"[{fact.node_id}] ({day_of(fact)}) {fact.text}{belief}"


def _context(
    stage: Stage, batch: Sequence[Node]
) -> tuple[list[dict[str, str]], dict[str, Node], list[str]]:
    """The prompt, the facts it showed by public id, and the reflections it showed."""
    job = stage.job
    k = job.cfg.similar_context_k
    vectors = job.store.get_vectors([f.id for f in batch])
    centre = mean_vector(list(vectors.values()))
    text = " ".join(f.text for f in batch)
    ids = [f.id for f in batch]
    related_ids = similar(job, centre, text, ["fact"], 2 * k, exclude=ids, before=min(ids))
    reflection_ids = similar(job, centre, text, ["reflection"], k)
    found = job.store.nodes_by_ids([*related_ids, *reflection_ids])
    related = [found[i] for i in related_ids if i in found]
    reflections = [found[i] for i in reflection_ids if i in found]
    messages = stage.prompt(
        "reflect",
        new_facts=data_block("\n".join(fact_line(f) for f in batch)),
        related_facts=data_block("\n".join(fact_line(f) for f in related) or "(none)"),
        known_reflections=data_block("\n".join(f"- {r.text}" for r in reflections) or "(none)"),
    )
    return messages, {f.node_id: f for f in [*batch, *related]}, [r.text for r in reflections]


def _checked(
    stage: Stage, reply: ReflectionsReply, shown: dict[str, Node], known: list[str]
) -> dict[str, tuple[str, float, list[int]]]:
    """Key -> (text, belief, supporting fact ids) of the reply's reflections that cite a
    shown fact and pass the quality rules (memcli.consolidate.quality)."""
    allowed = {key: node.id for key, node in shown.items()}
    by_id = {node.id: node for node in shown.values()}
    sieve = Sieve(known, grounded=GROUNDED_REFLECTION)
    planned: dict[str, tuple[str, float, list[int]]] = {}
    for item in reply.reflections:
        text = one_line(item.text)
        support = stage.known_ids(item.facts, allowed)
        if not text or not support:
            stage.count("unsupported_reflections", 1)
            continue
        dropped = sieve.reason(text, [fact_line(by_id[i]) for i in support])
        if dropped:
            stage.count(dropped, 1)
            continue
        key = fact_key(text)
        prior = planned.get(key, (text, item.belief, []))
        planned[key] = (text, prior[1], [*prior[2], *(s for s in support if s not in prior[2])])
    return planned


def _write(
    stage: Stage, batch: Sequence[Node], planned: dict[str, tuple[str, float, list[int]]]
) -> None:
    job = stage.job
    store = job.store
    existing = store.existing_keys(job.space, "reflection", list(planned))
    fresh = [k for k in planned if k not in existing]
    vectors = job.embed([planned[k][0] for k in fresh]) or [None] * len(fresh)
    by_id = {f.id: f for f in batch}
    with store.transaction():
        ids = {k: i for k in existing for i in store.ids_for_keys(job.space, "reflection", [k])}
        for key, vec in zip(fresh, vectors, strict=True):
            ids[key] = _insert(stage, key, planned[key], by_id, vec)
        edges = [
            Edge(ids[key], f, "DERIVED_FROM_FACT")
            for key, (_, _, facts) in planned.items()
            for f in facts
        ]
        stage.report.edges += store.add_edges(job.space, edges)
        store.mark_processed(job.space, "reflect", [f.id for f in batch])
    stage.report.items += 1


def _insert(
    stage: Stage, key: str, item: tuple[str, float, list[int]], facts: dict[int, Node], vec: Any
) -> int:
    job = stage.job
    stamps = [stamp for stamp in (facts[f].timestamp for f in item[2] if f in facts) if stamp]
    rid = job.store.insert_node(
        job.space, "reflection", item[0], timestamp=max(stamps) if stamps else None,
        belief=item[1], status="active", key=key,
    )  # fmt: skip
    job.save_vectors([(rid, "reflection", vec)])
    stage.report.nodes += 1
    return rid


def _reflect(stage: Stage, batch: Sequence[Node]) -> None:
    """One batch of facts; halves of it when it does not fit the model, a single fact that
    still does not is given up."""
    messages, shown, known = _context(stage, batch)
    try:
        reply = stage.ask(messages, ReflectionsReply)
    except Unfit:
        stage.split("reflect", batch, lambda part: _reflect(stage, part), lambda n: n.id)
        return
    if reply is None:  # counted; pending for a later run, or given up after a few
        stage.failed("reflect", [n.id for n in batch])
    else:
        _write(stage, batch, _checked(stage, reply, shown, known))


def run(stage: Stage) -> None:
    """Reflections over every fact not yet reflected on."""
    job = stage.job
    todo = job.store.unprocessed(job.space, "reflect", kind="fact")
    facts = job.store.nodes_by_ids(todo)
    ordered = [facts[i] for i in sorted(todo) if i in facts]
    size = job.cfg.reflect_batch
    batches = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    job.progress.start("reflecting", len(batches))
    for batch in batches:
        if not stage.budget_left():
            stage.report.reason = "stopped by --limit"
            break
        _reflect(stage, batch)
        job.progress.advance()
    job.progress.finish()
    stage.report.pending = len(job.store.unprocessed(job.space, "reflect", kind="fact"))
