"""The episodic buffer (GAM): unconsolidated turns per session, and when a buffer closes.

A session's buffer holds its turns that no segment contains yet. It closes when
- the session has ended: another session started after its last turn (by timestamp, or
  by ingest order when turns carry no time), or
- `--flush` is given (for a single growing chat log that never starts a new session).
An open buffer is still consolidated in windows of about `buffer_tokens` tokens once it
grows past that size; only the tail after the last window boundary waits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memcli.models import Node, embedding_text
from memcli.text import count_tokens


@dataclass
class Buffer:
    """The pending turns of one session, oldest first."""

    session: str
    episodes: list[Node]
    closed: bool

    @property
    def tokens(self) -> int:
        """Estimated tokens of the buffered turns."""
        return sum(turn_tokens(e) for e in self.episodes)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary for dry runs."""
        return {
            "session": self.session,
            "pending": len(self.episodes),
            "tokens": self.tokens,
            "closes": self.closed,
        }


def turn_tokens(node: Node) -> int:
    """Estimated tokens of one turn as prompts show it (speaker included)."""
    return count_tokens(embedding_text(node.text, node.speaker))


def _span_key(node: Node) -> tuple[str, int]:
    return (node.timestamp or "", node.id)


def session_order(episodes: Sequence[Node]) -> list[str]:
    """Sessions ordered by their first turn (time, then ingest order)."""
    first: dict[str, Node] = {}
    for ep in episodes:
        s = ep.session or ""
        if s not in first or _span_key(ep) < _span_key(first[s]):
            first[s] = ep
    return sorted(first, key=lambda s: (_span_key(first[s]), s))


def ended_sessions(episodes: Sequence[Node]) -> set[str]:
    """Sessions after whose last turn another session started."""
    first: dict[str, Node] = {}
    last: dict[str, Node] = {}
    for ep in episodes:
        s = ep.session or ""
        if s not in first or ep.id < first[s].id:
            first[s] = ep
        if s not in last or ep.id > last[s].id:
            last[s] = ep
    ended: set[str] = set()
    newest_start_id = max((n.id for n in first.values()), default=0)
    stamped = [n.timestamp for n in first.values() if n.timestamp]
    newest_start_ts = max(stamped, default=None)
    for s, end in last.items():
        later_by_id = newest_start_id > end.id
        later_by_time = bool(end.timestamp and newest_start_ts and newest_start_ts > end.timestamp)
        if later_by_id or later_by_time:
            ended.add(s)
    return ended


def pending_buffers(episodes: Sequence[Node], pending_ids: set[int], flush: bool) -> list[Buffer]:
    """The buffers holding pending turns, sessions in time order."""
    ended = ended_sessions(episodes)
    by_session: dict[str, list[Node]] = {}
    for ep in episodes:
        if ep.id in pending_ids:
            by_session.setdefault(ep.session or "", []).append(ep)
    return [
        Buffer(s, sorted(by_session[s], key=lambda e: (e.seq or 0, e.id)), flush or s in ended)
        for s in session_order(episodes)
        if s in by_session
    ]


def take_window(episodes: Sequence[Node], budget: int) -> list[Node]:
    """The longest prefix within `budget` tokens (at least one turn)."""
    used = 0
    for i, ep in enumerate(episodes):
        used += turn_tokens(ep)
        if used > budget and i > 0:
            return list(episodes[:i])
    return list(episodes)
