"""`memcli list`: browse a space's memories with filters, newest first, a page at a time."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memcli.dates import as_utc, parse_iso
from memcli.errors import UsageError, did_you_mean
from memcli.models import KIND_PREFIX, Node
from memcli.store.listing import NodeFilter

if TYPE_CHECKING:
    from memcli.ops.base import MemoryBase

DEFAULT_LIMIT = 20
# Beyond any store, and far from where SQLite's 64-bit integers (and a page's start) overflow.
MAX_ROWS = 1_000_000_000
_DURATION_LIKE = re.compile(r"\s*\d+\s*[a-z]+\s*")
_UNITS = "min, h, d, w, mo, y"


@dataclass(frozen=True)
class ListQuery:
    """What to list. `limit` 0 means no limit; `page` (from 1) is `offset` counted in pages."""

    kinds: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    grep: str | None = None
    limit: int = DEFAULT_LIMIT
    offset: int | None = None
    page: int | None = None

    def check(self) -> None:
        """Raise UsageError for a malformed or contradictory query."""
        unknown = [k for k in self.kinds if k not in KIND_PREFIX]
        if unknown:
            hint = did_you_mean(unknown[0], KIND_PREFIX)
            raise UsageError(
                f"unknown --kind {unknown[0]!r}{hint}", fix=f"kinds: {', '.join(KIND_PREFIX)}"
            )
        if self.limit < 0 or (self.offset or 0) < 0:
            raise UsageError("--limit and --offset must be 0 or more")
        if self.page is not None and self.page < 1:
            raise UsageError(f"--page counts from 1, got {self.page}")
        too_far = [
            flag for flag, value in (("--limit", self.limit), ("--offset", self.offset),
                                     ("--page", self.page))
            if value is not None and value > MAX_ROWS
        ]  # fmt: skip
        if too_far or (self.page is not None and self.start > MAX_ROWS):
            flag = too_far[0] if too_far else "--page"
            raise UsageError(
                f"{flag} is too large: a page may start and run at most {MAX_ROWS:,} memories in",
                fix="pass a smaller number (--limit 0 lists every memory)",
            )
        if self.page is not None and self.offset is not None:
            raise UsageError("--page and --offset both say where to start; pass one of them")
        if self.page is not None and self.limit == 0:
            raise UsageError("--page needs a page size", fix="pass --limit N (not 0) with --page")
        if self.grep is not None and not self.grep.strip():
            raise UsageError("--grep needs some text to look for")
        now = datetime.now(timezone.utc)
        for flag, value in (("--since", self.since), ("--until", self.until)):
            if value is not None:
                moment(flag, value, now)

    @property
    def start(self) -> int:
        """Index of the first memory of the page."""
        if self.page is not None:
            return (self.page - 1) * self.limit
        return self.offset or 0


def moment(flag: str, value: str, now: datetime) -> datetime:
    """An ISO date or date-time (no zone = UTC), or a duration back from `now` (7d, 12h)."""
    from memcli.ops.prune import older_than_cutoff

    if _DURATION_LIKE.fullmatch(value):
        try:
            return older_than_cutoff(value, now)
        except UsageError:
            pass
    else:
        parsed = parse_iso(value.strip())
        if parsed is not None:
            return as_utc(parsed)
    raise UsageError(
        f"{flag} expects an ISO date such as 2024-03-01 or a duration such as 7d, got {value!r}",
        fix=f"duration units: {_UNITS}; e.g. {flag} 30d or {flag} 2024-03-01T12:00",
    )


def _utc_text(flag: str, value: str | None, now: datetime) -> str | None:
    if value is None:
        return None
    return moment(flag, value, now).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class MemoryPage:
    """One page of listed memories and where it sits in the whole result."""

    items: list[Node]
    total: int
    offset: int
    limit: int
    unknown_sessions: list[str] = field(default_factory=list)  # --session values matching none
    known_sessions: list[str] = field(default_factory=list)  # a few that exist, for the hint

    @property
    def next_offset(self) -> int | None:
        """Where the next page starts, or None after the last one."""
        end = self.offset + len(self.items)
        return end if self.limit and end < self.total else None

    def item_dict(self, node: Node) -> dict[str, Any]:
        """One memory as a JSON record (ids ready for `inspect node` and `prune --node`)."""
        return {
            "node_id": node.node_id,
            "kind": node.kind,
            "timestamp": node.timestamp,
            "session": node.session,
            "speaker": node.speaker,
            "ref": node.ref,
            "text": node.text,
            "belief": node.belief,
            "status": node.status,
            "created_at": node.created_at,
        }


def list_memories(mem: MemoryBase, query: ListQuery) -> MemoryPage:
    """The page of the space's memories that `query` asks for, newest first."""
    from memcli.ops.sources import match_sources

    query.check()
    store, space = mem.store, mem.space
    now = datetime.now(timezone.utc)
    source_ids = (
        tuple(sorted(match_sources(store, space, query.sources))) if query.sources else None
    )
    where = NodeFilter(
        kinds=query.kinds,
        sessions=query.sessions,
        source_ids=source_ids,
        since=_utc_text("--since", query.since, now),
        until=_utc_text("--until", query.until, now),
        grep=query.grep,
    )
    items, total = store.list_nodes(space, where, query.limit or None, query.start)
    page = MemoryPage(items, total, query.start, query.limit)
    if not total and query.sessions:
        page.unknown_sessions = store.sessions_missing(space, query.sessions)
        page.known_sessions = store.session_names(space) if page.unknown_sessions else []
    return page
