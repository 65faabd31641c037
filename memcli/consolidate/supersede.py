"""The `supersede` stage: outdated facts are marked superseded, never deleted (PersonalAI's
update step, with the validity dates Graphiti keeps).

Every fact holds from `valid_from` (the date it refers to, else its turn's date). New facts
are taken in the order they became true, in batches of `supersede_batch`; each is shown to
the LLM with the earlier active facts that may be about the same thing: those naming one of
its entities (MENTIONS) and the `supersede_candidates` most similar ones. For each pair the
reply judges
- `updates`: the old fact gets status `superseded`, `valid_to` = the new fact's
  `valid_from` and `superseded_by`, and a SUPERSEDES edge comes from the new fact;
- `contradicts`: a CONTRADICTS edge links the two, both stay active (not resolved here).
A pair the prompt did not show is dropped and counted. An old fact already replaced earlier
in the same batch keeps its first successor, so a value that changes twice is a chain.
Unit of work: one batch, committed with its `processed` marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memcli.consolidate.nearest import similar
from memcli.consolidate.schemas import SupersedeReply
from memcli.consolidate.stage import Stage, Unfit
from memcli.models import Edge, Node
from memcli.prompting import data_block


def valid_from(fact: Node) -> str:
    """When a fact starts to hold: its own date, else its turn's date ('' when unknown)."""
    own = fact.props.get("valid_from")
    if isinstance(own, str) and own:
        return own
    return (fact.timestamp or "")[:10]


def _order(fact: Node) -> tuple[str, int]:
    return (valid_from(fact), fact.id)


@dataclass
class _Case:
    new: Node
    candidates: list[Node] = field(default_factory=list)


def _candidates(stage: Stage, fact: Node, entity_of: dict[int, set[int]]) -> list[Node]:
    """Earlier active facts that may be about the same thing as `fact`, oldest first."""
    job = stage.job
    store = job.store
    sharing = {
        e.src
        for e in store.edges_of(sorted(entity_of.get(fact.id, ())), ["MENTIONS"])
        if e.src != fact.id
    }
    vector = store.get_vectors([fact.id]).get(fact.id)
    close = similar(job, vector, fact.text, ["fact"], job.cfg.supersede_candidates,
                    exclude=[fact.id])  # fmt: skip
    found = store.nodes_by_ids(sharing | set(close))
    older = [
        n for n in found.values()
        if n.kind == "fact" and n.status != "superseded" and _order(n) < _order(fact)
    ]  # fmt: skip
    older.sort(key=_order)
    return older[-job.cfg.supersede_max_shown :]


def _line(fact: Node) -> str:
    return f"[{fact.node_id}] ({valid_from(fact) or 'undated'}) {fact.text}"


def _prompt(stage: Stage, cases: Sequence[_Case]) -> list[dict[str, str]]:
    blocks = []
    for n, case in enumerate(cases, start=1):
        lines = [f"### New fact {n}", _line(case.new), "Earlier facts:"]
        lines += [f"- {_line(c)}" for c in case.candidates]
        blocks.append("\n".join(lines))
    return stage.prompt("supersede", cases=data_block("\n\n".join(blocks)))


def _judged(stage: Stage, cases: Sequence[_Case], reply: SupersedeReply) -> list[Edge]:
    """The reply's pairs as edges, checked against the pairs the prompt showed. An old fact
    updated by several new ones is replaced by the earliest of them (a chain of values)."""
    by_new = {c.new.node_id: c for c in cases}
    edges: list[Edge] = []
    successor: dict[int, Node] = {}
    for j in reply.judgements:
        case = by_new.get(j.new.strip().strip("[]").lower())
        if case is None:
            stage.report.dropped += 1
            continue
        allowed = {c.node_id: c.id for c in case.candidates}
        old = next(iter(stage.known_ids([j.old], allowed)), None)
        if old is None or j.relation == "unrelated":
            continue
        if j.relation == "contradicts":
            edges.append(Edge(case.new.id, old, "CONTRADICTS"))
        elif old not in successor or _order(case.new) < _order(successor[old]):
            successor[old] = case.new
    edges += [Edge(new.id, old, "SUPERSEDES") for old, new in successor.items()]
    return edges


def _apply(stage: Stage, cases: Sequence[_Case], reply: SupersedeReply) -> None:
    """Write the judgements of one batch and mark its facts processed."""
    job = stage.job
    store = job.store
    edges = _judged(stage, cases, reply)
    shown = {c.id: c for case in cases for c in case.candidates}
    new_of = {c.new.id: c.new for c in cases}
    with store.transaction():
        for e in edges:
            if e.type == "SUPERSEDES":
                _retire(stage, shown[e.dst], new_of[e.src])
            else:
                stage.count("contradictions", 1)
        stage.report.edges += store.add_edges(job.space, edges)
        store.mark_processed(job.space, "supersede", [c.new.id for c in cases])
    stage.report.items += 1


def _retire(stage: Stage, old: Node, new: Node) -> None:
    """Mark a fact superseded by a newer one (inside the unit's transaction)."""
    current = stage.job.store.get_node(old.id) or old
    props = {**current.props, "valid_from": valid_from(current), "valid_to": valid_from(new),
             "superseded_by": new.node_id}  # fmt: skip
    stage.job.store.update_node(old.id, status="superseded", props=props)
    stage.count("superseded", 1)


def _entities_of(stage: Stage, facts: Sequence[Node]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for e in stage.job.store.edges_of([f.id for f in facts], ["MENTIONS"]):
        out.setdefault(e.src, set()).add(e.dst)
    return out


def _judge(stage: Stage, cases: Sequence[_Case]) -> None:
    """Judge one batch; halves of it when it does not fit the model, and a single fact that
    still does not is given up. A failed reply leaves the batch pending (counted)."""
    asked = [c for c in cases if c.candidates]
    try:
        reply = stage.ask(_prompt(stage, asked), SupersedeReply) if asked else SupersedeReply(
            judgements=[])  # fmt: skip
    except Unfit:
        stage.split("supersede", cases, lambda part: _judge(stage, part), lambda c: c.new.id)
        return
    if reply is None:  # counted; pending for a later run, or given up after a few
        stage.failed("supersede", [c.new.id for c in cases])
    else:
        _apply(stage, cases, reply)


def run(stage: Stage) -> None:
    """Judge every new fact against the earlier facts it may replace."""
    job = stage.job
    store = job.store
    todo = store.unprocessed(job.space, "supersede", kind="fact")
    facts = sorted(store.nodes_by_ids(todo).values(), key=_order)
    size = job.cfg.supersede_batch
    job.progress.start("checking facts for updates", len(facts))
    for start in range(0, len(facts), size):
        if not stage.budget_left():
            stage.report.reason = "stopped by --limit"
            break
        batch = facts[start : start + size]
        entity_of = _entities_of(stage, batch)
        _judge(stage, [_Case(f, _candidates(stage, f, entity_of)) for f in batch])
        job.progress.advance(len(batch))
    job.progress.finish()
    stage.report.pending = len(store.unprocessed(job.space, "supersede", kind="fact"))
