"""Inline SVG drawings: a hit's score by signal, and a node's neighbourhood.

The neighbourhood is laid out by igraph (memcli.graph.layout) on the server; every node
of the drawing is a link to its own page, so a click moves along the graph. Colours come
from the stylesheet (classes by node kind and signal), not from inline styles, which the
page's Content-Security-Policy would refuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memcli.models import parse_node_id
from memcli.retrieval.explain import SIGNALS, label, ordered
from memcli.ui.html import esc, node_href

WIDTH, HEIGHT, MARGIN = 760, 460, 40
BAR_WIDTH, BAR_HEIGHT = 240, 12


def _signal_class(key: str) -> str:
    return f"s-{key}" if key in SIGNALS else "s-other"


def why_bar(why: Mapping[str, float], score: float) -> str:
    """A stacked bar of the positive contributions (a negative one is listed, not drawn),
    scaled to the score, with a title on each part."""
    parts = [(k, v) for k, v in ordered(why) if v > 0]
    total = sum(v for _, v in parts) or 1.0
    x, rects = 0.0, []
    for key, value in parts:
        w = BAR_WIDTH * value / total
        tip = f"{label(key)}: {value:.3f}"
        rects.append(
            f'<rect class="{_signal_class(key)}" x="{x:.1f}" y="0" width="{w:.1f}" '
            f'height="{BAR_HEIGHT}"><title>{esc(tip)}</title></rect>'
        )
        x += w
    return (
        f'<svg class="whybar" width="{BAR_WIDTH}" height="{BAR_HEIGHT}" role="img" '
        f'aria-label="score {score:.3f} by signal">{"".join(rects)}</svg>'
    )


def why_legend(why: Mapping[str, float]) -> str:
    """Each contribution as a labelled value, in the order the signals are declared."""
    items = []
    for key, value in ordered(why):
        hint = SIGNALS[key].about if key in SIGNALS else key
        items.append(
            f'<li title="{esc(hint)}"><i class="sw {_signal_class(key)}"></i>'
            f"{esc(label(key))} <b>{value:+.3f}</b></li>"
        )
    return f'<ul class="why">{"".join(items)}</ul>'


def _kind(node_id: str) -> str:
    parsed = parse_node_id(node_id)
    return parsed[0] if parsed else "node"


def neighbourhood(
    centre: str,
    labels: Mapping[str, str],
    edges: Sequence[tuple[str, str, str]],
    positions: Mapping[str, tuple[float, float]],
) -> str:
    """The nodes at their positions (in [0, 1]²) with the edges between them; each node
    a link to its page, titled with its text."""

    def at(node: str) -> tuple[float, float]:
        x, y = positions[node]
        return MARGIN + x * (WIDTH - 2 * MARGIN), MARGIN + y * (HEIGHT - 2 * MARGIN)

    lines = []
    for src, dst, kind in edges:
        (x1, y1), (x2, y2) = at(src), at(dst)
        lines.append(
            f'<line class="e e-{esc(kind)}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" '
            f'y2="{y2:.1f}"><title>{esc(f"{src} {kind} {dst}")}</title></line>'
        )
    nodes = [_node(node, labels.get(node, ""), at(node), node == centre) for node in positions]
    return (
        f'<svg class="graph" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="neighbourhood of {esc(centre)}">'
        f'<g class="edges">{"".join(lines)}</g><g class="nodes">{"".join(nodes)}</g></svg>'
    )


def _node(node: str, text: str, where: tuple[float, float], centre: bool) -> str:
    x, y = where
    radius = 14 if centre else 10
    cls = f"n k-{_kind(node)}{' centre' if centre else ''}"
    return (
        f'<a href="{esc(node_href(node))}" class="{cls}" data-node="{esc(node)}">'
        f"<title>{esc(f'{node}: {text}')}</title>"
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}"></circle>'
        f'<text x="{x:.1f}" y="{y + radius + 12:.1f}">{esc(node)}</text></a>'
    )


def graph_labels(neighbours: Sequence[Mapping[str, Any]], centre: str, text: str) -> dict:
    """Node id -> text for the drawing's titles."""
    found = {n["node_id"]: n.get("text", "") for n in neighbours}
    found[centre] = text
    return found
