"""Packing ranked hits into a context an LLM (or a person) can read within a word budget."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from memcli.config import RetrievalConfig
from memcli.context.about import group_words, groups, render_group
from memcli.context.excerpt import matched_span
from memcli.context.passages import word_spans
from memcli.context.subjects import Subjects
from memcli.context.validity import current_first, superseded_note
from memcli.dates import parse_iso
from memcli.models import Hit, Node, SubjectGroup
from memcli.text import word_count
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
    """The rendered context, the hits that made it in and its subject groups."""

    context: str
    included: list[Hit]
    about: list[SubjectGroup] = field(default_factory=list)


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


EXCERPT_MIN = 40  # words: the shortest excerpt of a long message worth showing
#: What a model derived from the turns; packed within words of its own (see `pack`).
DERIVED = frozenset({"fact", "reflection"})


def _select(
    hits: Sequence[Hit], budget: int, caps: dict[str, int], question: str, whole: int = 0
) -> list[Hit]:
    """Best-ranked hits first, within per-kind caps and the word budget.

    A message longer than a fifth of the budget (at least EXCERPT_MIN words) is shown as an
    excerpt of that size around the passage the question matches (memcli.retrieval.
    excerpt), marked as such; one that no longer fits what is left of the budget is cut to
    fit rather than left out, as long as EXCERPT_MIN words are left. `whole`, when given,
    is the budget that fifth is of (the whole one, when part of it went to groups).
    """
    used, longest = 0, max((whole or budget) // 5, EXCERPT_MIN)
    taken: dict[str, int] = {}
    chosen: list[Hit] = []
    for hit in hits:
        kind = hit.node.kind
        if taken.get(kind, 0) >= caps.get(kind, budget):
            continue
        words, left = word_count(item_line(hit)), budget - used
        if kind == "episode" and words > min(left, longest):
            if left < EXCERPT_MIN:
                continue  # too little room left to show a useful part of it
            hit = _trimmed(hit, min(left, longest), question)
            words = word_count(item_line(hit))
        if words > left:
            continue  # a long item may not fit where a shorter, lower-ranked one does
        used += words
        taken[kind] = taken.get(kind, 0) + 1
        chosen.append(hit)
    return chosen


def _best_cut(hits: Sequence[Hit], budget: int, caps: dict[str, int], question: str) -> list[Hit]:
    """When even the best hit is longer than the budget: it, cut to fit, rather than none."""
    first = next((h for h in hits if caps.get(h.node.kind, budget) > 0), None)
    return [_trimmed(first, budget, question)] if first is not None and budget > 0 else []


def _trimmed(hit: Hit, budget: int, question: str) -> Hit:
    """The hit with its text cut so that its context line has at most `budget` words: the
    words around the passage the question matches (else its first words), with "…" where
    they were cut and, when there is room, a note of the excerpt's place in the whole."""
    text = hit.node.text
    words = word_spans(text)
    room = budget - (word_count(item_line(hit)) - len(words))
    if len(words) <= room:
        return hit
    keep = max(room - 2, 1)  # and a "…" at each cut
    span = matched_span(text, question) if question else None
    first = 0
    if span is not None:
        inside = [i for i, (a, b) in enumerate(words) if b > span[0] and a < span[1]]
        if inside:  # centre the passage, or its start when it is longer than what fits
            first = max(inside[0] - max((keep - len(inside)) // 2, 0), 0)
    marker = ""
    if room >= EXCERPT_MIN:
        keep -= 5  # the marker's words
        marker = f" [excerpt: words {{}}–{{}} of {len(words):,}]"
    first = max(min(first, len(words) - keep), 0)
    last = first + keep
    cut = text[words[first][0] : words[last - 1][1]]
    cut = ("… " if first > 0 else "") + cut + (" …" if last < len(words) else "")
    cut += marker.format(f"{first + 1:,}", f"{last:,}")
    return dataclasses.replace(hit, node=dataclasses.replace(hit.node, text=cut))


def _episode_order(hit: Hit) -> tuple[object, ...]:
    n = hit.node
    return (n.timestamp is None, n.timestamp or "", n.session or "", n.seq or 0, n.id)


def render(chosen: Sequence[Hit], about: Sequence[SubjectGroup] = ()) -> str:
    """Sections of derived memories, then conversation excerpts grouped by session in time
    order, then what is said about each subject (memcli.context.about): a turn in a
    subject group is shown there, not among the excerpts (facts stay in their section too,
    current first)."""
    moved = _moved(about)
    chosen = [h for h in chosen if h.node.node_id not in moved]
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
    parts.extend(map(render_group, about))
    return "\n\n".join(parts)


def _choose(
    hits: Sequence[Hit], budget: int, derived: int, caps: dict[str, int], question: str,
    whole: int = 0,
) -> list[Hit]:  # fmt: skip
    """The turns (and topics, entities, concepts) within `budget`, chosen as if there were
    no facts or reflections; facts and reflections within their own `derived` words."""
    turns = [h for h in hits if h.node.kind not in DERIVED]
    notes = [h for h in hits if h.node.kind in DERIVED]
    chosen = _select(turns, budget, caps, question, whole) + _select(notes, derived, caps, question)
    rank = {h.node.id: i for i, h in enumerate(hits)}
    chosen.sort(key=lambda h: rank[h.node.id])  # rank order, as subject groups read them
    return chosen or _best_cut(hits, budget, caps, question)


def pack(
    hits: Sequence[Hit],
    budget: int,
    caps: dict[str, int],
    question: str = "",
    subjects: Subjects | None = None,
    derived: int | None = None,
) -> Packed:
    """Choose hits within the budget and render them; long messages are shown by the part
    that `question` is about. Facts and reflections get `derived` words of their own, on top
    of `budget`: a model's derived memories, good or weak, never push a verbatim turn out of
    the context (None: in the default settings' proportion, `retrieval.derived_words` for
    `word_budget`). With `subjects`, what the chosen hits say about a subject is grouped
    (memcli.context.about); the words a group adds (its heading, dates, marks) come out of
    the budget: the hits are chosen again within what is left, and groups that would still
    not fit are left out."""
    if derived is None:
        derived = RetrievalConfig.derived_words * budget // RetrievalConfig.word_budget
    chosen = _choose(hits, budget, derived, caps, question)
    about = groups(chosen, subjects)
    if about:
        room = budget - _added(chosen, about)
        chosen = _choose(hits, room, derived, caps, question, whole=budget)
        about = groups(chosen, subjects)
        if _words(chosen) + _added(chosen, about) > budget + derived:
            about = []
    return Packed(render(chosen, about), chosen, about)


def _words(chosen: Sequence[Hit]) -> int:
    """The words the chosen hits' lines take."""
    return sum(word_count(item_line(h)) for h in chosen)


def _moved(about: Sequence[SubjectGroup]) -> set[str]:
    """The turns that subject groups show in place of the conversation excerpts."""
    return {s.node_id for group in about for s in group.statements if s.kind == "episode"}


def _added(chosen: Sequence[Hit], about: Sequence[SubjectGroup]) -> int:
    """The words subject groups add to a context: theirs, less the lines they take over."""
    moved = _moved(about)
    return sum(map(group_words, about)) - _words([h for h in chosen if h.node.node_id in moved])
