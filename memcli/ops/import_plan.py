"""Deciding what an import adds to a store: which of the dump's memories are already there,
which ids the new ones get, how turns join sessions the store already holds, and whether
the dump's graph can be merged at all.

Rules (docs/export-import.md):
- A turn is already there when the space holds one with the same content key (the key
  `ingest` gives it: session, ref, speaker, time and words), so importing twice adds nothing.
- A derived memory (segment, fact, reflection, concept, entity) is already there when the
  space holds one of its kind under the same content key (a fact's or reflection's words, a
  concept's label, a segment's first and last turn).
- The dump's graph is refused when a new derived memory rests on turns (or facts) that the
  space has already consolidated in the same stage: two consolidations of the same turns
  would leave twin topics and facts. `--episodes-only` imports the turns alone instead.
- New memories keep their ids when every one of them is above every id the file has ever
  given out (always so for a new store), so a restored store cites the same `ep12`;
  otherwise all of them are numbered after the file's highest id.
- New turns of a session the space already holds continue it: they are numbered and
  NEXT-chained after its last turn, as `ingest` would add them.
- A turn the space has forgotten (a tombstone under its content key, in the space or in the
  dump) is not imported, nor what was derived only from it (the rules of `prune`'s cascade);
  its session's chain is joined across it. `allow_forgotten` imports it and lifts the
  tombstone. The dump's tombstones are added, except for turns the space holds.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.errors import InvalidInput
from memcli.store.base import now_iso
from memcli.store.prune import next_bridges, support_pairs

if TYPE_CHECKING:
    from memcli.ops.dump import Dump
    from memcli.store import Store

# The stage that made each derived kind, and the edge from its inputs: (type, the end of
# the edge where the input sits). Used to find derived memories made twice.
MADE_BY = {
    "segment": ("segment", "PART_OF", "src"),
    "fact": ("facts", "DERIVED_FROM", "dst"),
    "reflection": ("reflect", "DERIVED_FROM_FACT", "dst"),
}
CONFLICT_FIX = (
    "import only the turns with --episodes-only and run `memcli consolidate`, or import into "
    "another space with --space NAME"
)


def segment_key(key: str | None, ids: dict[int, int]) -> str | None:
    """A segment's key names its first and last turn by row id (consolidate/segment.py):
    the same key in the target's ids, or None when either turn is not mapped."""
    first, _, last = (key or "").partition("-")
    if not (first.isdigit() and last.isdigit()):
        return key
    if int(first) not in ids or int(last) not in ids:
        return None
    return f"{ids[int(first)]}-{ids[int(last)]}"


@dataclass
class Plan:
    """What an import writes, in the target store's ids."""

    ids: dict[int, int] = field(default_factory=dict)  # dump row id -> target row id
    new: list[int] = field(default_factory=list)  # dump row ids of the nodes to insert
    kept_ids: bool = True
    seqs: dict[int, int] = field(default_factory=dict)  # new turns appended to a session
    chain: list[tuple[int, int]] = field(default_factory=list)  # NEXT edges, target ids
    left_out: int = 0  # derived nodes not imported (--episodes-only)
    with_marks: bool = True  # carry over what consolidation had done (not with --episodes-only)
    sources: dict[int, int | None] = field(default_factory=dict)  # None: a new source
    forgotten: set[int] = field(default_factory=set)  # forgotten turns left out, dump rows
    forgotten_derived: set[int] = field(default_factory=set)  # derived only from those
    bridges: list[tuple[int, int]] = field(default_factory=list)  # NEXT across them, dump rows
    tombstones: list[tuple[str, str]] = field(default_factory=list)  # (key, when) to add
    restored: list[str] = field(default_factory=list)  # keys let back in (allow_forgotten)

    def existing(self, dump: Dump) -> dict[str, int]:
        """Kind -> how many of the dump's nodes the store already held."""
        fresh = set(self.new)
        counts: dict[str, int] = defaultdict(int)
        for row in self.ids:
            if row not in fresh:
                counts[dump.nodes[row]["kind"]] += 1
        return dict(counts)


def _match(store: Store, space: str, dump: Dump, kinds: list[str], plan: Plan) -> None:
    """Map the dump's nodes of these kinds that the space already holds."""
    for kind in kinds:
        keyed: dict[str, int] = {}
        for row, node in dump.nodes.items():
            if node["kind"] == kind and node["key"] is not None:
                key = segment_key(node["key"], plan.ids) if kind == "segment" else node["key"]
                if key is not None:
                    keyed[key] = row
        for key, target in store.ids_by_key(space, kind, list(keyed)).items():
            plan.ids[keyed[key]] = target


def _conflicts(store: Store, dump: Dump, plan: Plan, matched: set[int]) -> int:
    """How many new derived nodes rest on inputs the store consumed in the same stage."""
    inputs: dict[int, set[int]] = defaultdict(set)
    for edge in dump.edges:
        for kind, (_, etype, side) in MADE_BY.items():
            made, used = (edge["dst"], edge["src"]) if side == "src" else (edge["src"], edge["dst"])
            if edge["type"] == etype and dump.nodes[made]["kind"] == kind and used in matched:
                inputs[made].add(plan.ids[used])
    clashes = 0
    for made, used in inputs.items():
        if made in plan.ids:
            continue  # already there, not new
        stage = MADE_BY[dump.nodes[made]["kind"]][0]
        clashes += bool(store.processed_among(stage, sorted(used)))
    return clashes


def _number(store: Store, dump: Dump, plan: Plan) -> None:
    """Give the new nodes their target ids (their own when they are all free)."""
    highest = store.max_node_id()
    plan.kept_ids = all(row > highest for row in plan.new)
    for offset, row in enumerate(plan.new, start=1):
        plan.ids[row] = row if plan.kept_ids else highest + offset


def _continue_sessions(store: Store, space: str, dump: Dump, plan: Plan) -> None:
    """Append new turns of sessions the space already holds after their last turn."""
    by_session: dict[str, list[int]] = defaultdict(list)
    for row in plan.new:
        node = dump.nodes[row]
        if node["kind"] == "episode":
            by_session[node["session"] or "default"].append(row)
    for session, rows in by_session.items():
        tail = store.session_tail(space, session)
        if tail is None:
            continue
        previous, seq = tail
        for row in sorted(rows, key=lambda r: (dump.nodes[r]["seq"] or 0, r)):
            seq += 1
            plan.seqs[row] = seq
            plan.chain.append((previous, plan.ids[row]))
            previous = plan.ids[row]


def _forgotten_turns(store: Store, space: str, dump: Dump, plan: Plan) -> set[int]:
    """Rows of the dump's turns not in the space whose keys the space or the dump forgot."""
    keyed = {
        node["key"]: row
        for row, node in dump.nodes.items()
        if node["kind"] == "episode" and node["key"] is not None and row not in plan.ids
    }
    keys = store.forgotten_keys(space, list(keyed)) | (set(keyed) & set(dump.forgotten))
    return {keyed[key] for key in keys}


def _resting_only_on(dump: Dump, gone: set[int]) -> set[int]:
    """The dump's derived nodes left without support without `gone` (memcli.store.prune)."""
    kinds = {row: node["kind"] for row, node in dump.nodes.items()}
    ends = ((e["src"], e["dst"], e["type"], kinds[e["src"]], kinds[e["dst"]]) for e in dump.edges)
    support: dict[int, set[int]] = defaultdict(set)
    for derived, supporter in support_pairs(ends):
        support[derived].add(supporter)
    lost = set(gone)
    while True:
        more = {d for d, by in support.items() if d not in lost and by & lost and by <= lost}
        if not more:
            return lost - gone
        lost |= more


def _leave_forgotten_out(store: Store, space: str, dump: Dump, plan: Plan) -> None:
    """Plan to leave out the forgotten turns, what rests only on them, and their sources."""
    plan.forgotten = _forgotten_turns(store, space, dump, plan)
    if not plan.forgotten:
        return
    plan.forgotten_derived = _resting_only_on(dump, plan.forgotten)
    nxt = {e["src"]: e["dst"] for e in dump.edges if e["type"] == "NEXT"}
    plan.bridges = next_bridges(nxt, plan.forgotten)


def _tombstones(store: Store, space: str, dump: Dump, plan: Plan) -> None:
    """The dump's tombstones to add (not for turns the space holds or now imports), and
    with `allow_forgotten` the space's tombstones the imported turns lift."""
    new_keys = [dump.nodes[r]["key"] for r in plan.new if dump.nodes[r]["kind"] == "episode"]
    held = store.existing_keys(space, "episode", list(dump.forgotten)) | set(new_keys)
    plan.tombstones = [(k, when) for k, when in dump.forgotten.items() if k not in held]
    plan.restored = sorted(store.forgotten_keys(space, [k for k in new_keys if k]))


def make_plan(
    store: Store, space: str, dump: Dump, episodes_only: bool, allow_forgotten: bool = False
) -> Plan:
    """Everything the import adds; InvalidInput when the dump's graph cannot be merged."""
    plan = Plan(with_marks=not episodes_only)
    _match(store, space, dump, ["episode"], plan)
    if not allow_forgotten:
        _leave_forgotten_out(store, space, dump, plan)
    out = plan.forgotten | plan.forgotten_derived
    wanted = [
        r
        for r, n in dump.nodes.items()
        if (not episodes_only or n["kind"] == "episode") and r not in out
    ]
    plan.left_out = len(dump.nodes) - len(wanted) - len(out)
    if not episodes_only:
        derived = sorted({n["kind"] for n in dump.nodes.values()} - {"episode"})
        _match(store, space, dump, derived, plan)
        clashes = _conflicts(store, dump, plan, set(plan.ids))
        if clashes:
            problem = (
                f"{dump.name}: {clashes} topic segments, facts or reflections in the file rest "
                "on turns (or facts) this space has already consolidated differently"
            )
            raise InvalidInput([problem], fix=CONFLICT_FIX)
    plan.new = [row for row in wanted if row not in plan.ids]
    _number(store, dump, plan)
    _continue_sessions(store, space, dump, plan)
    known = {row["sha256"]: row["id"] for row in store.space_sources(space)}
    plan.sources = {sid: known.get(src["sha256"]) for sid, src in dump.sources.items()}
    for sid in _only_forgotten_sources(dump, plan.forgotten):
        del plan.sources[sid]
    _tombstones(store, space, dump, plan)
    return plan


def _only_forgotten_sources(dump: Dump, forgotten: set[int]) -> set[int]:
    """Sources of the dump all of whose turns are left out as forgotten."""
    linked: dict[int, set[int]] = defaultdict(set)
    for row, node in dump.nodes.items():
        for sid in node["sources"]:
            linked[sid].add(row)
    return {sid for sid, rows in linked.items() if rows and rows <= forgotten}


def edge_rows(dump: Dump, plan: Plan) -> list[dict[str, Any]]:
    """The dump's edges between imported nodes, in target ids, plus session chains."""
    appended = {plan.ids[row] for row in plan.seqs}
    rows = []
    for edge in dump.edges:
        src, dst = plan.ids.get(edge["src"]), plan.ids.get(edge["dst"])
        if src is None or dst is None:
            continue
        if edge["type"] == "NEXT" and (src in appended or dst in appended):
            continue  # replaced by the chain after the session's last turn
        rows.append({**edge, "src": src, "dst": dst})
    stamp = now_iso()
    joined = [(plan.ids.get(a), plan.ids.get(b)) for a, b in plan.bridges]
    joined = [(a, b) for a, b in joined if a and b and not {a, b} & appended]
    for src, dst in [*plan.chain, *joined]:  # (appended turns are chained after the tail)
        rows.append({"src": src, "dst": dst, "type": "NEXT", "weight": 1.0, "created_at": stamp})
    return rows


def node_rows(dump: Dump, plan: Plan) -> list[dict[str, Any]]:
    """The rows of the new nodes, in target ids (segment keys and appended seqs too)."""
    rows = []
    for row in plan.new:
        node = dump.nodes[row]
        key = segment_key(node["key"], plan.ids) if node["kind"] == "segment" else node["key"]
        seq = plan.seqs.get(row, node["seq"])
        rows.append({**node, "id": plan.ids[row], "key": key, "seq": seq})
    return rows
