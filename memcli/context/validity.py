"""Facts that were replaced by newer ones (the `supersede` stage) in a packed context: the
current facts come first, and a superseded fact says until when it held and what replaced
it, so "what is X now?" reads the current value and "what was X before?" still can."""

from __future__ import annotations

from collections.abc import Sequence

from memcli.dates import parse_iso
from memcli.models import Hit, Node


def day(iso: str) -> str:
    """An ISO date or time as a day ('2 April 2023'); what cannot be parsed as it is."""
    moment = parse_iso(iso)
    return f"{moment.day} {moment:%B %Y}" if moment is not None else iso


def validity_mark(status: str | None, until: object, by: object) -> str:
    """' [superseded on 2 April 2023 by fa7]' for status 'superseded', else ''."""
    if status != "superseded":
        return ""
    on = f" on {day(until)}" if isinstance(until, str) and until else ""
    return f" [superseded{on}{f' by {by}' if by else ''}]"


def superseded_note(node: Node) -> str:
    """' [superseded on 2 April 2023 by fa7]' for a replaced fact, '' for any other node."""
    return validity_mark(node.status, node.props.get("valid_to"), node.props.get("superseded_by"))


def current_first(hits: Sequence[Hit]) -> list[Hit]:
    """The hits in their order, except that superseded facts come after every other hit."""
    return sorted(hits, key=lambda h: h.node.status == "superseded")
