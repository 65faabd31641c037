"""Packing ranked hits into a context an LLM (or a person) can read within a word budget."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from memcli.dates import parse_iso
from memcli.models import Hit, Node
from memcli.retrieval.validity import current_first, superseded_note
from memcli.text import first_words, word_count
from memcli.timeexpr import annotate

# Section order and titles for derived kinds; episodes come last, in time order.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("fact", "Facts"),
    ("reflection", "Reflections"),
    ("segment", "Topics"),
    ("entity", "Entities"),
    ("concept", "Concepts"),
)


@dataclass
class Packed:
    """The rendered context and the hits that made it in."""

    context: str
    included: list[Hit]


def when(node: Node) -> str:
    """A readable date for a node's timestamp ('Mon 8 May 2023, 13:56'), or ''."""
    if not node.timestamp:
        return ""
    moment = parse_iso(node.timestamp)
    if moment is None:
        return node.timestamp
    text = f"{moment:%a} {moment.day} {moment:%B %Y}"
    return text if (moment.hour, moment.minute) == (0, 0) else f"{text}, {moment:%H:%M}"


def _fact_date(node: Node) -> str:
    """When a fact holds from: its valid_from, else the time of the turn it came from."""
    valid_from = node.props.get("valid_from")
    if isinstance(valid_from, str) and valid_from:
        return when(Node(node.id, node.kind, node.space, node.text, timestamp=valid_from))
    return when(node)


def item_line(hit: Hit) -> str:
    """One line of context for a hit, led by its citable id.

    A turn's relative time expressions are followed by the dates they meant
    ("[yesterday = 7 May 2023]"), resolved at ingest from the session date.
    """
    node = hit.node
    if node.kind == "episode":
        speaker = f"{node.speaker}: " if node.speaker else ""
        refs = node.props.get("time_refs")
        note = f" {annotate(refs)}" if isinstance(refs, list) and refs else ""
        return f"[{node.node_id}] {speaker}{node.text}{note}"
    extra = ""
    if node.kind == "segment" and node.props.get("keywords"):
        extra = f" (keywords: {', '.join(node.props['keywords'])})"
    date = _fact_date(node) if node.kind == "fact" else ""
    dated = f" ({date})" if date else ""
    return f"- [{node.node_id}] {node.text}{dated}{extra}{superseded_note(node)}"


def _select(hits: Sequence[Hit], budget: int, caps: dict[str, int]) -> list[Hit]:
    """Best-ranked hits first, within per-kind caps and the word budget."""
    used = 0
    taken: dict[str, int] = {}
    chosen: list[Hit] = []
    for hit in hits:
        kind = hit.node.kind
        if taken.get(kind, 0) >= caps.get(kind, budget):
            continue
        words = word_count(item_line(hit))
        if used + words > budget:
            continue  # a long item may not fit where a shorter, lower-ranked one does
        used += words
        taken[kind] = taken.get(kind, 0) + 1
        chosen.append(hit)
    if not chosen:  # even the best hit is longer than the budget: cut it rather than lose it
        first = next((h for h in hits if caps.get(h.node.kind, budget) > 0), None)
        if first is not None and budget > 0:
            chosen.append(_trimmed(first, budget))
    return chosen


def _trimmed(hit: Hit, budget: int) -> Hit:
    """The hit with its text cut so that its context line has at most `budget` words."""
    overhead = word_count(item_line(hit)) - word_count(hit.node.text) + 1  # and the "…"
    text = first_words(hit.node.text, max(budget - overhead, 1))
    return dataclasses.replace(hit, node=dataclasses.replace(hit.node, text=text))


def _episode_order(hit: Hit) -> tuple[object, ...]:
    n = hit.node
    return (n.timestamp is None, n.timestamp or "", n.session or "", n.seq or 0, n.id)


def render(chosen: Sequence[Hit]) -> str:
    """Sections of derived memories, then conversation excerpts grouped by session in time order."""
    parts: list[str] = []
    for kind, title in SECTIONS:
        lines = [item_line(h) for h in current_first(chosen) if h.node.kind == kind]
        if lines:
            parts.append(f"## {title}\n" + "\n".join(lines))
    episodes = sorted((h for h in chosen if h.node.kind == "episode"), key=_episode_order)
    if episodes:
        lines = ["## Conversation excerpts (oldest first)"]
        current: str | None = None
        for hit in episodes:
            header = hit.node.session or ""
            if header != current:
                date = when(hit.node)
                lines.append(
                    f"### {hit.node.session or 'session'}" + (f" — {date}" if date else "")
                )
                current = header
            lines.append(item_line(hit))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def pack(hits: Sequence[Hit], budget: int, caps: dict[str, int]) -> Packed:
    """Choose hits within the budget and render them."""
    chosen = _select(hits, budget, caps)
    return Packed(render(chosen), chosen)
