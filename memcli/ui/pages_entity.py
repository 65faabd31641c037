"""An entity's page: who or what it is, its relations, its mentions over time (a bar per
month) and its fact chain (current and superseded facts in time order), as
`memcli inspect entity` reads them (memcli.ops.entity)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from memcli.ui.html import esc, node_link, table

if TYPE_CHECKING:
    from memcli.memory import Memory

BAR_W, BAR_H, GAP, LABEL_H = 40, 60, 8, 30


def entity(mem: Memory, name: str) -> str:
    """The entity named (or with the id) `name`."""
    view = mem.entity_view(name)
    timeline = view["timeline"]
    facts = [t for t in timeline if t["kind"] == "fact"]
    head = (
        f'<h1>{esc(view["name"])} <span class="kind">entity {esc(view["node_id"])}</span></h1>'
        f"<p>{esc(view['description'])}</p>"
        + (f"<p class=hint>also: {esc(', '.join(view['aliases']))}</p>" if view["aliases"] else "")
        + f"<p>{view['mentions']:,} mentions · {node_link(view['node_id'], 'its node page')}</p>"
    )
    return (
        head
        + f"<h2>Mentions over time</h2>{_months(timeline)}"
        + _facts(facts)
        + _relations(view["relations"])
        + "<h2>Everything said about it</h2>"
        + table(["when", "node", "speaker", "text"], [_said(t) for t in timeline], "said")
    )


def _months(timeline: list[dict[str, Any]]) -> str:
    """A bar per month with mentions (undated ones left out), as inline SVG."""
    months = Counter(t["date"][:7] for t in timeline if t.get("date"))
    if not months:
        return '<p class="hint">No dated mention.</p>'
    top = max(months.values())
    bars = []
    for i, (month, count) in enumerate(sorted(months.items())):
        h, x = BAR_H * count / top, i * (BAR_W + GAP)
        bars.append(
            f'<rect x="{x}" y="{BAR_H - h:.1f}" width="{BAR_W}" height="{h:.1f}">'
            f"<title>{esc(month)}: {count}</title></rect>"
            f'<text x="{x + BAR_W / 2}" y="{BAR_H + 12}">{esc(month[2:])}</text>'
            f'<text x="{x + BAR_W / 2}" y="{BAR_H + 25}">{count}</text>'
        )
    width = len(months) * (BAR_W + GAP)
    return (
        f'<svg class="months" width="{width}" height="{BAR_H + LABEL_H}" role="img" '
        f'aria-label="mentions per month">{"".join(bars)}</svg>'
        '<p class="hint">Months with mentions (yy-mm, then how many).</p>'
    )


def _facts(facts: list[dict[str, Any]]) -> str:
    """The fact chain: facts about the entity in time order, superseded ones marked."""
    if not facts:
        return ""
    rows = []
    for f in facts:
        state = f.get("status") or "active"
        mark = "warn" if state == "superseded" else "ok"
        until = f" until {esc(f['valid_to'])}" if f.get("valid_to") else ""
        turns = ", ".join(f.get("turns", []))
        rows.append([
            esc(f["date"]), node_link(f["node_id"]),
            f'<span class="badge {mark}">{esc(state)}</span>{until}', esc(f["text"]), esc(turns),
        ])  # fmt: skip
    return "<h2>Fact chain</h2>" + table(["from", "fact", "validity", "text", "turns"], rows)


def _relations(relations: list[dict[str, Any]]) -> str:
    if not relations:
        return ""
    rows = [
        [esc(r["subject"]), esc(r["predicate"]), f'<a href="/entity/{esc(r["object_id"])}">'
         f"{esc(r['object'])}</a>", esc(r.get("date") or "")]
        for r in relations
    ]  # fmt: skip
    return "<h2>Relations</h2>" + table(["subject", "relation", "object", "when"], rows)


def _said(item: dict[str, Any]) -> list[str]:
    return [esc(item["date"]), node_link(item["node_id"]), esc(item.get("speaker") or ""),
            esc(item["text"])]  # fmt: skip
