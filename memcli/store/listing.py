"""What browsing a space's nodes (`memcli list`) means in either backend: the filter, and
the kinds that sort after what was said and concluded."""

from __future__ import annotations

from dataclasses import dataclass

# What indexes the memories (topic segments, concepts, entities) comes after what was said
# and concluded: made at consolidation and mostly undated, it would otherwise fill the first
# pages of every consolidated store ahead of the conversation itself.
ORGANISER_KINDS = ("segment", "concept", "entity")


@dataclass(frozen=True)
class NodeFilter:
    """Which nodes of a space to list; every given condition must hold."""

    kinds: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()  # names or globs (*, ?, [...])
    source_ids: tuple[int, ...] | None = None  # episodes ingested from these sources
    since: str | None = None  # ISO date-time in UTC, inclusive
    until: str | None = None  # ISO date-time in UTC, exclusive
    grep: str | None = None  # text contains this, ignoring case


def is_glob(pattern: str) -> bool:
    """Whether a session name is a glob pattern (holds *, ? or [)."""
    return any(ch in pattern for ch in "*?[")
