"""Reading a space the way a person browses it: sessions by date, one session's turns,
the consolidation runs, and what forgetting a node would take (`memcli ui` shows these).

Nothing here writes: `forget_preview` is `prune`'s own dry run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memcli.errors import NotFound, UsageError

if TYPE_CHECKING:
    from memcli.models import Node, PruneReport
    from memcli.ops.base import MemoryBase


@dataclass(frozen=True)
class Page:
    """One page of a longer list: its items, where it starts, and how many there are."""

    items: list[Any]
    offset: int
    limit: int
    total: int

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts, or None on the last."""
        after = self.offset + self.limit
        return after if after < self.total else None


def _check_page(limit: int, offset: int) -> None:
    if limit < 1 or offset < 0:
        raise UsageError(f"a page needs limit ≥ 1 and offset ≥ 0, got {limit} and {offset}")


def sessions(mem: MemoryBase, limit: int = 50, offset: int = 0) -> Page:
    """The space's sessions oldest first: name, first and last time, number of turns."""
    _check_page(limit, offset)
    rows, total = mem.store.session_page(mem.space, limit, offset)
    return Page(rows, offset, limit, total)


def session_turns(mem: MemoryBase, session: str) -> list[Node]:
    """The turns of one session in order; NotFound when the space has no such session."""
    turns = mem.store.session_turns(mem.space, session)
    if not turns:
        raise NotFound(
            f"no session {session!r} in space {mem.space!r}",
            fix="list sessions with `memcli list --kind episode`",
        )
    return turns


def runs(mem: MemoryBase, limit: int = 50, offset: int = 0) -> Page:
    """Consolidation runs of the space, newest first: stage, status, counts, tokens,
    failures and the last error (as `memcli inspect` reports the latest of each stage)."""
    _check_page(limit, offset)
    rows, total = mem.store.run_page(mem.space, limit, offset)
    return Page(rows, offset, limit, total)


def forget_preview(mem: MemoryBase, node_id: str) -> PruneReport:
    """What `memcli prune --node ID` would remove: prune's dry run, nothing removed."""
    from memcli.ops.prune import Selection, prune

    return prune(mem, Selection(nodes=(node_id,)), dry_run=True)


@dataclass
class Neighbourhood:
    """A node's page: its view (fields, trimmed neighbours, provenance), how many
    neighbours of each "TYPE in|out" were left out, and the edges among the nodes shown
    (public ids: src, dst, type)."""

    view: dict[str, Any]
    left_out: dict[str, int]
    edges: list[tuple[str, str, str]]


def neighbourhood(mem: MemoryBase, node_id: str, per_type: int = 8) -> Neighbourhood:
    """A node with at most `per_type` neighbours of each edge type and direction, and
    every edge among those nodes (so a drawing shows how the neighbours hang together)."""
    from memcli.models import parse_node_id
    from memcli.ops.inspect import node_window

    view, left_out = node_window(mem, node_id, per_type)
    rows: dict[int, str] = {}  # row id -> public id of every node shown
    for public in [view["node_id"], *(n["node_id"] for n in view["neighbours"])]:
        parsed = parse_node_id(public)
        if parsed is not None:
            rows[parsed[1]] = public
    edges = [(rows[a], rows[b], kind) for a, b, kind, _ in mem.store.edges_within(list(rows))]
    return Neighbourhood(dict(view), left_out, edges)
