"""Subject groups of the packed context: what the packed memories say about one subject,
oldest first, each statement dated, the latest marked.

Without an LLM nothing decides that a later statement replaced an earlier one ("I live in
Porto" … "I moved to Lyon"): shown side by side in time order with their dates, the reader
sees which is the latest. Subjects are the named things memories mention and the speakers
the question names (memcli.context.subjects). A subject gets a group when the question
names it and at least two packed memories are about it, or when at least SEVERAL are and
it is not one of the conversation's participants; the subjects the question names come
first, then those with more memories; at most MAX_GROUPS groups. A group takes
MAX_LINES packed memories about its subject that no earlier group took (what the question
is about, not everything ever said of the subject): its facts first, then its turns, each
in rank order (facts state the subject's values with their validity, and a superseded value
reads right only beside the one that replaced it), and shows them oldest
first, each led by its id and date; the latest of them that is not a superseded fact is
marked. A turn is shown there in place of its line among the conversation excerpts; a
fact is also kept in the facts section, where current facts come first, and keeps its
validity marks (memcli.context.validity).
"""

from __future__ import annotations

from collections.abc import Sequence

from memcli.context.subjects import Subjects
from memcli.context.validity import day, validity_mark
from memcli.models import Hit, Node, Statement, SubjectGroup
from memcli.text import word_count
from memcli.timeexpr import annotate

MAX_GROUPS = 2
MAX_LINES = 5
SEVERAL = 3  # memories about a subject the question does not name, for a group
LATEST = " (latest)"
GROUP_HEADING = "## About {} (oldest first)"


def _date(node: Node) -> str | None:
    """When a memory was said (a turn) or holds from (a fact)."""
    valid_from = node.props.get("valid_from") if node.kind == "fact" else None
    return valid_from if isinstance(valid_from, str) and valid_from else node.timestamp


def _order(hit: Hit) -> tuple[object, ...]:
    """Time order: undated memories first, then by date, session and turn; a fact after
    the turns of its own moment, as what was concluded from them (so it is the one marked
    latest, not the turn it rests on)."""
    n = hit.node
    date = _date(n)
    return (date is not None, date or "", n.kind == "fact", n.session or "", n.seq or 0, n.id)


def _candidates(chosen: Sequence[Hit], subjects: Subjects) -> list[tuple[str, list[Hit]]]:
    """(subject key, its packed memories in rank order) of every subject that earns a group,
    the ones the question names first, then by how many memories are about them."""
    by_key: dict[str, list[Hit]] = {}
    for hit in chosen:
        for key in subjects.about.get(hit.node.id, []):
            by_key.setdefault(key, []).append(hit)
    earned = [
        (key, hits)
        for key, hits in by_key.items()
        if len(hits) >= 2
        and (key in subjects.asked or (len(hits) >= SEVERAL and key not in subjects.participants))
    ]
    return sorted(earned, key=lambda kv: (kv[0] not in subjects.asked, -len(kv[1])))


def _statement(hit: Hit) -> Statement:
    node = hit.node
    refs = node.props.get("time_refs") if node.kind == "episode" else None
    note = annotate(refs) if isinstance(refs, list) and refs else ""
    by = node.props.get("superseded_by") if node.kind == "fact" else None
    until = node.props.get("valid_to") if node.kind == "fact" else None
    return Statement(
        node.node_id, node.kind, _date(node), node.speaker if node.kind == "episode" else None,
        node.text, note, status=node.status if node.kind == "fact" else None,
        valid_to=until if isinstance(until, str) else None,
        superseded_by=by if isinstance(by, str) else None,
    )  # fmt: skip


def _group(name: str, hits: list[Hit]) -> SubjectGroup:
    """The group of `hits` (oldest first), the latest current statement marked."""
    said = [_statement(h) for h in sorted(hits, key=_order)]
    current = [s for s in said if s.status != "superseded"]
    if current:
        current[-1].latest = True
    return SubjectGroup(name, said)


def groups(chosen: Sequence[Hit], subjects: Subjects | None) -> list[SubjectGroup]:
    """The subject groups of the packed hits `chosen` (in rank order); a memory goes to the
    first group it belongs to, and a group left with fewer than two is dropped."""
    if subjects is None or not subjects.about:
        return []
    out: list[SubjectGroup] = []
    taken: set[int] = set()
    for key, hits in _candidates(chosen, subjects):
        free = [h for h in hits if h.node.id not in taken]
        shown = sorted(free, key=lambda h: h.node.kind != "fact")[:MAX_LINES]  # stable
        if len(out) == MAX_GROUPS or len(shown) < 2:
            continue
        taken.update(h.node.id for h in shown)
        out.append(_group(subjects.names[key], shown))
    return out


def _line(s: Statement) -> str:
    date = f"({day(s.date)}) " if s.date else ""
    speaker = f"{s.speaker}: " if s.speaker else ""
    mark = validity_mark(s.status, s.valid_to, s.superseded_by)
    note = f" {s.note}" if s.note else ""
    return f"- [{s.node_id}] {date}{speaker}{s.text}{note}{mark}{LATEST if s.latest else ''}"


def render_group(group: SubjectGroup) -> str:
    """A group as a section of the packed context."""
    lines = [GROUP_HEADING.format(group.subject), *map(_line, group.statements)]
    return "\n".join(lines)


def group_words(group: SubjectGroup) -> int:
    """The words a group takes in the packed context."""
    return word_count(render_group(group))
