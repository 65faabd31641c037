"""What forgetting means in every backend: which nodes live on which, and what goes with a
removal (the cascade), over the few reads each backend provides.

A derived node lives as long as something it was derived from lives ("support"):

| kind | supported by |
|---|---|
| segment | an episode with a PART_OF edge into it |
| fact | a node its DERIVED_FROM edges point at (episodes) |
| reflection | a node its DERIVED_FROM_FACT edges point at (facts) |
| concept, entity | any node of another kind it shares an edge with |

Episodes are never removed by the cascade, only by being selected. Concepts and entities
count only edges to other kinds, so two entities joined by nothing but a RELATION edge go
together once the episodes that mention them are gone.

A forgotten turn leaves a tombstone, so that it stays forgotten: `prune` records the turn's
content key (the key `ingest` gave it, a hash of its session, message id, speaker, time as
written, words and place among identical turns of its file: memcli.ops.ingest.episode_key).
The key is a hash: a tombstone holds no text, speaker or session name, so `prune --vacuum`
can scrub every word of the turn from the store and keep the tombstone. Ingest, add and
import look keys up before they store a turn, and skip a forgotten one unless told to let
it back (`--allow-forgotten`), which lifts its tombstone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from memcli.store.base import now_iso

# Edge types whose source end is the derived node and whose target is what it came from.
DERIVED_TO_ORIGIN = ("DERIVED_FROM", "DERIVED_FROM_FACT")
# Edge types whose target end is the derived node.
ORIGIN_TO_DERIVED = ("PART_OF",)
# Kinds kept alive by any edge to a node of another kind.
HUB_KINDS = ("concept", "entity")


def support_pairs(rows: Iterable[tuple[int, int, str, str, str]]) -> Iterator[tuple[int, int]]:
    """(derived, supporter) pairs from (src, dst, type, src kind, dst kind) edge rows."""
    for src, dst, typ, src_kind, dst_kind in rows:
        if typ in DERIVED_TO_ORIGIN and src_kind != "episode":
            yield src, dst
        elif typ in ORIGIN_TO_DERIVED and dst_kind != "episode":
            yield dst, src
        else:
            if dst_kind in HUB_KINDS and src_kind != dst_kind:
                yield dst, src
            if src_kind in HUB_KINDS and src_kind != dst_kind:
                yield src, dst


def next_bridges(nxt: dict[int, int], removed: set[int]) -> list[tuple[int, int]]:
    """(src, dst) NEXT links that join a chain (src -> its next) across removed links."""
    bridges = []
    for src, dst in nxt.items():
        if src in removed or dst not in removed:
            continue
        while dst in removed and dst in nxt:
            dst = nxt[dst]
        if dst not in removed:
            bridges.append((src, dst))
    return bridges


# Kinds that are derived from something and live only while it does.
DERIVED_KINDS = ("segment", "fact", "reflection", "concept", "entity")


class Cascade:
    """What goes with a removal: the cascade over support pairs, the same for every
    backend. A store provides `_support` ((derived, supporter) pairs over the edges
    touching some nodes), `kinds_of` and `select_nodes`."""

    if TYPE_CHECKING:

        def _support(self, node_ids: Iterable[int]) -> list[tuple[int, int]]: ...
        def kinds_of(self, node_ids: Sequence[int]) -> dict[int, str]: ...
        def select_nodes(self, space: str, *, kinds: Iterable[str] | None = None) -> set[int]: ...

    def derived_from(self, origin_ids: Iterable[int]) -> set[int]:
        """Every node derived, directly or through other derived nodes, from the origins."""
        found: set[int] = set()
        frontier = set(origin_ids)
        while frontier:
            children = {d for d, s in self._support(frontier) if s in frontier} - found
            found |= children
            frontier = children
        return found

    def _unsupported(self, candidates: set[int], gone: set[int]) -> set[int]:
        """The candidates (derived nodes) left with no supporter outside `gone`."""
        kinds = self.kinds_of(sorted(candidates))
        derived = {n for n, kind in kinds.items() if kind != "episode"}
        alive = {d for d, s in self._support(derived) if d in derived and s not in gone}
        return derived - alive

    def cascade(self, removed: Iterable[int]) -> set[int]:
        """`removed` plus every derived node that would be left without support."""
        gone = set(removed)
        frontier = set(gone)
        while frontier:
            touched = {d for d, s in self._support(frontier) if s in frontier} - gone
            lost = self._unsupported(touched, gone)
            gone |= lost
            frontier = lost
        return gone

    def orphans(self, space: str) -> set[int]:
        """Derived nodes of a space without any support now (after a crash or an old bug),
        and whatever depends only on them."""
        return self.cascade(self._unsupported(self.select_nodes(space, kinds=DERIVED_KINDS), set()))


class SourceLinks:
    """Which episodes came from which source files, both ways, over the backend's
    `_source_pairs` ((episode, source) links whose `column` is among some ids)."""

    if TYPE_CHECKING:

        def _source_pairs(self, column: str, ids: Iterable[int]) -> Iterator[tuple[int, int]]: ...

    def source_links(self, episode_ids: Iterable[int]) -> dict[int, set[int]]:
        """Episode id -> ids of the source files it was ingested from."""
        out: dict[int, set[int]] = {}
        for node, source in self._source_pairs("node", episode_ids):
            out.setdefault(node, set()).add(source)
        return out

    def linked_episodes(self, source_ids: Iterable[int]) -> dict[int, set[int]]:
        """Source id -> ids of every episode linked to it."""
        out: dict[int, set[int]] = {int(s): set() for s in source_ids}
        for node, source in self._source_pairs("source", out):
            out[source].add(node)
        return out


class Tombstones:
    """Recording the tombstones of turns about to be forgotten (see above), over the
    backend's `turn_keys` and `put_forgotten`."""

    if TYPE_CHECKING:

        def turn_keys(self, space: str, node_ids: Iterable[int]) -> list[str]: ...
        def put_forgotten(self, space: str, rows: Sequence[tuple[str, str]]) -> int: ...

    def record_forgotten(self, space: str, node_ids: Iterable[int]) -> int:
        """Tombstones for the turns among these nodes (call before deleting them, inside
        the same transaction); returns how many turns were not yet recorded."""
        stamp = now_iso()
        return self.put_forgotten(space, [(key, stamp) for key in self.turn_keys(space, node_ids)])
