"""`memcli inspect entity NAME` for people: description, relations, then the timeline."""

from __future__ import annotations

import json
from typing import Any

from memcli.present.common import SafeTable
from memcli.present.output import Output


def _said(item: dict[str, Any]) -> str:
    """A timeline item's text with the values and statements recorded next to the name."""
    text = item["text"]
    if item.get("values"):
        text += f"  [values: {', '.join(item['values'])}]"
    for said in item.get("statements", []):
        text += f"  [{said.get('predicate')} {said.get('object')}]"
    if item["kind"] == "fact":
        status = item["status"]
        if status == "superseded":
            status += f" until {item.get('valid_to') or '?'}"
        text += f"  ({status}; from turns {', '.join(item['turns']) or '-'})"
    return text


def show_entity(out: Output, view: dict[str, Any]) -> None:
    """An entity's card and its timeline."""
    if out.json:
        out.record(view)
        return
    lines = [f"{view['name']}  ({view['node_id']}, {view['type'] or 'entity'})"]
    if view["description"]:
        lines.append(view["description"])
    if view["aliases"]:
        lines.append(
            "aliases: " + ", ".join(json.dumps(a, ensure_ascii=False) for a in view["aliases"])
        )
    count = view["mentions"]
    lines.append(f"mentioned by {count} {'memory' if count == 1 else 'memories'}")
    for rel in view["relations"]:
        turns = ", ".join(rel["turns"])
        lines.append(f"- {rel['subject']} {rel['predicate']} {rel['object']} ({turns})")
    out.text("\n".join(lines))
    table = SafeTable(title="timeline (oldest first)", title_justify="left")
    for col in ("date", "node", "speaker", "said"):
        table.add_column(col)
    for item in view["timeline"]:
        table.add_row(item["date"] or "", item["node_id"], item["speaker"] or "", _said(item))
    out.table(table)
