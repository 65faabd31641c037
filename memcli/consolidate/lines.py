"""How prompts show stored memories: a node's date, and a turn as one line (id, date,
speaker, text, and the dates its relative expressions resolve to)."""

from __future__ import annotations

from memcli.models import Node
from memcli.timeexpr import resolve_relative


def day_of(node: Node) -> str:
    """A node's date as YYYY-MM-DD (with the time when there is one), or 'undated'."""
    if not node.timestamp:
        return "undated"
    stamp = node.timestamp.replace("T", " ")
    return stamp[:16] if len(stamp) >= 16 and stamp[11:16] != "00:00" else stamp[:10]


def turn_line(node: Node, date_hints: bool = False) -> str:
    """One turn as prompts show it: id, date, speaker and text (plus resolved dates)."""
    speaker = f"{node.speaker}: " if node.speaker else ""
    line = f"[{node.node_id}] ({day_of(node)}) {speaker}{node.text}"
    if date_hints:
        resolved = resolve_relative(node.text, node.timestamp)
        if resolved:
            line += "  {dates: " + "; ".join(f'"{e}" = {d}' for e, d in resolved) + "}"
    return line
