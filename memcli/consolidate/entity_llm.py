"""Entity descriptions and triplets of one segment from the LLM (MemORAI), through the
validated structured-output path: the requests the `facts` stage asked about the segment's
turns the gate kept (prompts/extract.md, `memcli.consolidate.extract`), answered again from
the reply cache.

Every entity note and triplet must cite turns of the segment; ids the prompt never showed
are dropped (and counted), and a note or triplet left without a turn is dropped too
(`unsupported`). A note whose name its turns do not say (or that is a sentence rather than
a name), and a triplet whose subject or object (unless a value) its turns do not say, is
dropped as `ungrounded`. A reply that never fits the schema is a counted failure and leaves the
segment pending. Triplets between two entities become RELATION edges (subject -> object)
carrying every predicate said between them, with its turns and date; a triplet whose object
is a value (a number, an amount, a date) is kept as a statement on the MENTIONS edge from
each cited turn to the subject.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.consolidate import extract as asking
from memcli.consolidate.grounding import Said, is_name
from memcli.consolidate.lines import turn_line
from memcli.consolidate.names import Found
from memcli.consolidate.schemas import ExtractReply
from memcli.consolidate.stage import Unfit, halves, parallel
from memcli.dates import partial_date
from memcli.models import Edge, Node
from memcli.text import canonical_key, one_line

if TYPE_CHECKING:
    from memcli.consolidate.job import Job
    from memcli.consolidate.stage import Stage

FAILED: Any = object()  # the reply stayed invalid: the segment waits for a later run (or,
# after FAILED_RUNS runs, has the rules' entities alone)
MAX_DESCRIPTION_CHARS = 400


@dataclass
class _Note:
    name: str
    kind: str
    description: str
    turns: list[int]


@dataclass
class _Triplet:
    subject: str
    predicate: str
    obj: str
    turns: list[str]  # public ids, as edges keep them
    turn_ids: list[int]
    date: str | None


def is_value(text: str) -> bool:
    """Whether a triplet's object is a value (number, amount, date) rather than a thing."""
    head = text.strip()[:1]
    return bool(head) and (head.isdigit() or not head.isalnum())


@dataclass
class Extraction:
    """One segment's checked reply, ready to write."""

    notes: list[_Note] = field(default_factory=list)
    triplets: list[_Triplet] = field(default_factory=list)

    def add_names(self, found: Found) -> None:
        """Add the reply's names, and the turns that mention them, to the rule findings."""
        for note in self.notes:
            _name(found, note.name, note.kind, note.turns)
        for t in self.triplets:
            _name(found, t.subject, "name", t.turn_ids)
            if not is_value(t.obj):
                _name(found, t.obj, "name", t.turn_ids)
            else:
                key = canonical_key(t.subject)
                for turn in t.turn_ids:
                    said = found.statements.setdefault(turn, {}).setdefault(key, [])
                    said.append({"predicate": t.predicate, "object": t.obj, "date": t.date})

    def prefetch(self, job: Job) -> None:
        """Embed the described entities' texts before the unit's transaction."""
        job.prefetch(described(n.name, n.description) for n in self.notes if n.description)

    def write(self, stage: Stage, ids: dict[str, int]) -> list[Edge]:
        """Store descriptions (inside the unit's transaction); return the RELATION edges."""
        job = stage.job
        for note in self.notes:
            eid = ids.get(canonical_key(note.name))
            if eid is not None and note.description:
                _describe(job, eid, note)
        return _relations(stage, ids, self.triplets)


def described(name: str, description: str) -> str:
    """What is embedded for an entity with a description."""
    return f"{name}: {description}" if description else name


def _name(found: Found, name: str, kind: str, turns: Sequence[int]) -> None:
    key = canonical_key(name)
    if not key or key.isdigit():
        return
    found.names.setdefault(key, (one_line(name), kind))
    for turn in turns:
        found.said.setdefault(turn, {}).setdefault(key, [])


def _describe(job: Job, eid: int, note: _Note) -> None:
    node = job.store.get_node(eid)
    if node is None:
        return
    props = {**node.props, "description": note.description}
    if note.kind and node.props.get("source") != "llm":
        props["type"] = note.kind
    props["source"] = "llm"
    job.store.update_node(eid, props=props)
    vectors = job.embed([described(node.text, note.description)])
    job.save_vectors([(eid, "entity", vectors[0] if vectors else None)])
    job.entities.records[eid].kind = props.get("type", note.kind)


def _relations(stage: Stage, ids: dict[str, int], triplets: Sequence[_Triplet]) -> list[Edge]:
    """RELATION edges for entity-to-entity triplets, merged with the stored ones."""
    store = stage.job.store
    wanted: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for t in triplets:
        src, dst = ids.get(canonical_key(t.subject)), ids.get(canonical_key(t.obj))
        if src is None or dst is None or src == dst or is_value(t.obj):
            continue
        item = {"predicate": t.predicate, "turns": t.turns, "date": t.date}
        wanted.setdefault((src, dst), []).append(item)
    stored = {(e.src, e.dst): e for e in store.edges_of(list({s for s, _ in wanted}), ["RELATION"])}
    edges = []
    for (src, dst), items in wanted.items():
        old = stored.get((src, dst))
        merged = list(old.props.get("predicates", [])) if old else []
        merged += [i for i in items if i not in merged]
        edge = Edge(src, dst, "RELATION", 1.0, {"predicates": merged})
        if old is not None:
            store.set_edge_props(edge)
        else:
            edges.append(edge)
    stage.count("triplets", sum(len(v) for v in wanted.values()))
    return edges


def _checked(stage: Stage, reply: ExtractReply, members: Sequence[Node]) -> Extraction:
    """The reply with invented turn ids dropped, unsupported items counted, and names the
    cited turns do not say dropped (`ungrounded`: memcli.consolidate.grounding)."""
    allowed = {e.node_id: e.id for e in members}
    public = {e.id: e.node_id for e in members}
    lines = {e.id: turn_line(e, date_hints=True) for e in members}
    out = Extraction()
    for note in reply.entities:
        turns = stage.known_ids(note.turns, allowed)
        if not turns or not canonical_key(note.name):
            stage.count("unsupported", 1)
        elif not (is_name(note.name) and Said(lines[i] for i in turns).holds(note.name)):
            stage.count("ungrounded", 1)
        else:
            text = one_line(note.description)[:MAX_DESCRIPTION_CHARS]
            out.notes.append(_Note(one_line(note.name), note.type.strip().lower(), text, turns))
    for t in reply.triplets:
        turns = stage.known_ids(t.turns, allowed)
        if not turns or not canonical_key(t.subject) or not t.object.strip():
            stage.count("unsupported", 1)
        elif not _grounded(t.subject, t.object, [lines[i] for i in turns]):
            stage.count("ungrounded", 1)
        else:
            out.triplets.append(
                _Triplet(one_line(t.subject), one_line(t.predicate).lower(), one_line(t.object),
                         [public[i] for i in turns], turns, partial_date(t.date))
            )  # fmt: skip
    return out


def _grounded(subject: str, obj: str, lines: Sequence[str]) -> bool:
    """Whether a triplet's subject, and its object unless a value (a date the turn's date
    resolves, an amount written otherwise), are names said in its turns."""
    said = Said(lines)
    if not (is_name(subject) and said.holds(subject)):
        return False
    return is_value(obj) or (is_name(obj) and said.holds(obj))


def extract(
    stage: Stage, units: Sequence[tuple[Node, Sequence[Node]]], kept: Callable[[Node], bool]
) -> list[Any]:
    """Per (segment, turns): an Extraction, None (no LLM, or the gate skipped the segment)
    or FAILED (a reply stayed invalid; counted). Only the turns `kept` (by the gate) are
    asked about, in the groups the `facts` stage asked."""
    if stage.chat is None:
        return [None] * len(units)
    asked = [i for i, (seg, _) in enumerate(units) if seg.props.get("gate") != "skip"]
    stage.count("gated", len(units) - len(asked))
    parts = [(i, part) for i in asked for part in asking.groups(stage, _kept(units[i][1], kept))]
    replies = parallel(
        lambda part: _asked(stage, part), [p for _, p in parts], stage.job.concurrency
    )
    out: list[Any] = [None] * len(units)
    for i, _ in parts:
        out[i] = Extraction()
    for (i, part), reply in zip(parts, replies, strict=True):
        if out[i] is FAILED:
            continue
        got = _fitted(stage, part, reply)
        if got is FAILED:
            out[i] = FAILED
        elif got is not None:
            out[i].notes += got.notes
            out[i].triplets += got.triplets
    return out


def _asked(stage: Stage, turns: Sequence[Node]) -> ExtractReply | Unfit | None:
    try:
        return asking.ask(stage, turns)
    except Unfit as unfit:
        return unfit


def _kept(members: Sequence[Node], kept: Callable[[Node], bool]) -> list[Node]:
    return [m for m in members if kept(m)]


def _fitted(stage: Stage, members: Sequence[Node], reply: ExtractReply | Unfit | None) -> Any:
    """The Extraction of a reply; for turns too many for the model (Unfit), the merged
    extractions of their halves, asked in turn (a single turn that still does not fit is
    left to the rules: None). FAILED when a reply stayed invalid."""
    if reply is None:
        return FAILED
    if not isinstance(reply, Unfit):
        return _checked(stage, reply, members)
    if len(members) == 1:
        stage.count("too_long", 1)
        return None
    merged = Extraction()
    for part in halves(members):
        got = _fitted(stage, part, _asked(stage, part))
        if got is FAILED:
            return FAILED
        if got is not None:
            merged.notes += got.notes
            merged.triplets += got.triplets
    return merged
