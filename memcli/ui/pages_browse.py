"""Browsing pages: the timeline, a session, a node with its neighbourhood, the lists of
memories and entities, and an entity's mentions over time.

Each reads through the library (memcli.ops: browse, inspect, entity, listing) and only
writes HTML; nothing here touches SQL or changes the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcli.ui.html import day, esc, node_link, pager, table, url
from memcli.ui.svg import graph_labels, neighbourhood

if TYPE_CHECKING:
    from memcli.memory import Memory
    from memcli.models import Node, PruneReport

PER_PAGE = 50
PER_TYPE = 8  # neighbours of each edge type and direction shown (and drawn) on a node page
PROVENANCE_SHOWN = 20  # source turns listed (a concept may rest on thousands)

# How a neighbour relates to the node on the page, by edge type and direction.
RELATION = {
    ("NEXT", "in"): "turn before",
    ("NEXT", "out"): "turn after",
    ("PART_OF", "out"): "in topic",
    ("PART_OF", "in"): "turn of this topic",
    ("DERIVED_FROM", "in"): "derived from this",
    ("DERIVED_FROM", "out"): "derived from",
    ("DERIVED_FROM_FACT", "in"): "reflection on this",
    ("DERIVED_FROM_FACT", "out"): "reflects on",
    ("HAS_CONCEPT", "out"): "concept",
    ("HAS_CONCEPT", "in"): "has this concept",
    ("ABOUT_CONCEPT", "out"): "concept",
    ("ABOUT_CONCEPT", "in"): "fact about this",
    ("MENTIONS", "out"): "mentions",
    ("MENTIONS", "in"): "mentioned by",
    ("SUPERSEDES", "out"): "replaces",
    ("SUPERSEDES", "in"): "superseded by",
}


def timeline(mem: Memory, offset: int) -> str:
    """Sessions by date, oldest first, each with its span and number of turns."""
    from memcli.ops.browse import sessions

    page = sessions(mem, PER_PAGE, offset)
    rows = [
        [
            _session_link(s["session"]),
            esc(day(s["first"])),
            esc(day(s["last"])),
            f"{s['turns']:,}",
        ]
        for s in page.items
    ]
    return (
        "<h1>Timeline</h1>"
        + pager("/timeline", offset, page.limit, page.total)
        + table(["session", "from", "to", "turns"], rows, "timeline")
    )


def _session_link(name: str) -> str:
    return f'<a class="session" href="{url("/session", name=name)}">{esc(name)}</a>'


def session(mem: Memory, name: str) -> str:
    """One session's turns in order; each links to its node page (neighbours, what was
    derived from it, its source file)."""
    from memcli.ops.browse import session_turns

    turns = session_turns(mem, name)
    rows = [
        [node_link(t.node_id), esc(day(t.timestamp)), esc(t.speaker or ""), esc(t.text)]
        for t in turns
    ]
    return (
        f"<h1>Session {esc(name)}</h1><p class=hint>{len(turns)} turns, "
        f"{esc(day(turns[0].timestamp))} – {esc(day(turns[-1].timestamp))}. "
        '<a href="/timeline">All sessions</a></p>'
        + table(["turn", "time", "speaker", "text"], rows, "turns")
    )


def node(mem: Memory, node_id: str) -> str:
    """A node: its fields and validity, its neighbourhood drawn and listed, where it came
    from, and what forgetting it would remove (a preview; nothing is removed)."""
    from memcli.graph import layout
    from memcli.ops import browse

    near = browse.neighbourhood(mem, node_id, PER_TYPE)
    view = near.view
    ids = list(dict.fromkeys([view["node_id"], *(n["node_id"] for n in view["neighbours"])]))
    index = {n: i for i, n in enumerate(ids)}
    spots = layout(len(ids), [(index[a], index[b]) for a, b, _ in near.edges])
    drawing = neighbourhood(
        view["node_id"],
        graph_labels(view["neighbours"], view["node_id"], view["text"]),
        near.edges,
        dict(zip(ids, spots, strict=True)),
    )
    return (
        _node_head(view, drawing)
        + '<section class="near"><h2>Neighbours</h2>'
        + _neighbour_table(view["neighbours"], near.left_out)
        + "</section>"
        + _provenance(view)
        + _forget(browse.forget_preview(mem, view["node_id"]), view["node_id"])
    )


def _node_head(view: dict[str, Any], drawing: str) -> str:
    facts = [("kind", esc(view["kind"]))]
    if view["speaker"]:
        facts.append(("speaker", esc(view["speaker"])))
    if view["session"]:
        seq = f" · turn {view['seq']}" if view["seq"] is not None else ""
        facts.append(("session", _session_link(view["session"]) + seq))
    for key in ("timestamp", "ref", "belief", "created_at"):
        if view[key] is not None:
            facts.append((key, esc(view[key])))
    facts.append(("validity", _validity(view)))
    props = {k: v for k, v in view["props"].items() if k not in ("valid_from", "valid_to")}
    if props:
        facts.append(("props", f"<code>{esc(props)}</code>"))
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    return (
        f'<h1>{node_link(view["node_id"])} <span class="kind">{esc(view["kind"])}</span></h1>'
        f'<blockquote class="text">{esc(view["text"])}</blockquote>'
        f'<div class="nodegrid"><table class="facts">{rows}</table>{drawing}</div>'
    )


def _validity(view: dict[str, Any]) -> str:
    """Current or superseded (with the fact that replaced it), and the dates it holds."""
    props = view["props"]
    newer = [
        n["node_id"]
        for n in view["neighbours"]
        if (n["type"], n["direction"]) == ("SUPERSEDES", "in")
    ]
    if view["status"] == "superseded" or newer:
        text = '<span class="badge warn">superseded</span>'
        if newer:
            text += " by " + ", ".join(node_link(n) for n in newer)
    else:
        text = '<span class="badge ok">current</span>'
    span = [f"from {esc(props['valid_from'])}" if props.get("valid_from") else ""]
    span.append(f"until {esc(props['valid_to'])}" if props.get("valid_to") else "")
    return text + " " + " ".join(s for s in span if s)


def _neighbour_table(neighbours: list[dict[str, Any]], left_out: dict[str, int]) -> str:
    rows = [
        [
            esc(RELATION.get((n["type"], n["direction"]), f"{n['type']} {n['direction']}")),
            esc(n["type"]),
            node_link(n["node_id"]),
            esc(n["kind"]),
            esc(n["text"]),
        ]
        for n in neighbours
    ]
    more = ", ".join(f"{count:,} more {key}" for key, count in sorted(left_out.items()))
    note = f'<p class="hint">Not shown: {esc(more)}.</p>' if more else ""
    return table(["relation", "edge", "node", "kind", "text"], rows, "neighbours") + note


def _provenance(view: dict[str, Any]) -> str:
    prov = view["provenance"]
    parts = []
    if prov["episodes"]:
        episodes = prov["episodes"]
        turns = ", ".join(node_link(e) for e in episodes[:PROVENANCE_SHOWN])
        more = len(episodes) - PROVENANCE_SHOWN
        turns += f" and {more:,} more" if more > 0 else ""
        parts.append(f"<p>Derived from the turns {turns}.</p>")
    if prov["files"]:
        files = "".join(f"<li><code>{esc(f)}</code></li>" for f in prov["files"])
        parts.append(f"<p>Ingested from:</p><ul>{files}</ul>")
    if not parts:
        parts.append('<p class="hint">No source file or turn recorded.</p>')
    return f'<section class="prov"><h2>Provenance</h2>{"".join(parts)}</section>'


def _forget(report: PruneReport, node_id: str) -> str:
    """prune's dry run for this node, as a preview."""
    removed = ", ".join(f"{n:,} {kind}" for kind, n in report.removed.items() if n) or "nothing"
    examples = "".join(
        f"<li>{node_link(e['node_id']) if 'node_id' in e else ''} {esc(e.get('text', ''))}</li>"
        for e in report.examples
    )
    return (
        '<section class="forget"><h2>If it were forgotten</h2>'
        f"<p><code>memcli prune --node {esc(node_id)}</code> would remove {esc(removed)} "
        f"and {report.edges:,} edges.</p>"
        + (f"<ul>{examples}</ul>" if examples else "")
        + '<p class="hint">A preview only: this page never deletes anything.</p></section>'
    )


def listing(mem: Memory, kind: str | None, grep: str | None, offset: int) -> str:
    """Memories newest first, filtered by kind and text (as `memcli list`)."""
    from memcli.ops.listing import ListQuery

    page = mem.list_memories(
        ListQuery(kinds=(kind,) if kind else (), grep=grep or None, limit=PER_PAGE, offset=offset)
    )
    rows = [_list_row(n) for n in page.items]
    form = (
        '<form class="filter" action="/list" method="get">'
        f'<input type="hidden" name="kind" value="{esc(kind or "")}">'
        f'<input name="grep" type="search" value="{esc(grep or "")}" placeholder="text contains">'
        "<button>Filter</button></form>"
    )
    title = f"{esc(kind)} memories" if kind else "All memories"
    return (
        f"<h1>{title}</h1>{form}"
        + pager("/list", offset, PER_PAGE, page.total, kind=kind, grep=grep)
        + table(["node", "kind", "time", "speaker", "text"], rows, "list")
    )


def _list_row(n: Node) -> list[str]:
    first = node_link(n.node_id)
    if n.kind == "entity":  # its own page: mentions over time, fact chain
        first = f'<a class="nid k-entity" href="/entity/{esc(n.node_id)}">{esc(n.node_id)}</a>'
    return [first, esc(n.kind), esc(day(n.timestamp)), esc(n.speaker or ""), esc(n.text)]
