"""`memcli inspect graph`: a space's whole graph as GraphML (Gephi), JSON or DOT (Graphviz).

Nodes are named by their public ids (ep12, sg3, ...) so exports can be joined back to
`memcli inspect node ID`; every node carries its kind, text and the fields it has, and every
edge its type and weight.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from xml.etree import ElementTree

from memcli.errors import UsageError
from memcli.models import Edge, Node, node_public_id

if TYPE_CHECKING:
    from memcli.ops import Memory

FORMATS = ("graphml", "json", "dot")

# Node fields exported as attributes, with their GraphML types.
NODE_FIELDS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),
    ("text", "string"),
    ("speaker", "string"),
    ("session", "string"),
    ("seq", "long"),
    ("timestamp", "string"),
    ("ref", "string"),
    ("belief", "double"),
    ("status", "string"),
)
LABEL_CHARS = 60
# Characters XML 1.0 cannot carry at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _label(node: Node) -> str:
    text = " ".join(node.text.split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _attrs(node: Node) -> dict[str, Any]:
    values = {name: getattr(node, name) for name, _ in NODE_FIELDS}
    return {"label": _label(node), **{k: v for k, v in values.items() if v is not None}}


def _graph(mem: Memory) -> tuple[list[Node], list[Edge], dict[int, str]]:
    nodes = list(mem.store.iter_nodes(mem.space))
    names = {n.id: node_public_id(n.kind, n.id) for n in nodes}
    edges = [e for e in mem.store.iter_edges(mem.space) if e.src in names and e.dst in names]
    return nodes, edges, names


def to_json(
    nodes: list[Node], edges: list[Edge], names: dict[int, str], space: str, compact: bool = False
) -> str:
    """{"space", "nodes": [{"id", "label", kind...}], "edges": [{"source", "target", ...}]};
    `compact` puts it on one line (a JSON Lines record)."""
    doc = {
        "space": space,
        "nodes": [{"id": names[n.id], **_attrs(n), "props": n.props} for n in nodes],
        "edges": [
            {
                "source": names[e.src],
                "target": names[e.dst],
                "type": e.type,
                "weight": e.weight,
                **({"props": e.props} if e.props else {}),
            }
            for e in edges
        ],
    }
    return json.dumps(doc, ensure_ascii=False, indent=None if compact else 1)


def to_graphml(nodes: list[Node], edges: list[Edge], names: dict[int, str], space: str) -> str:
    """GraphML with typed attribute keys, readable by Gephi, yEd, igraph and networkx."""
    root = ElementTree.Element("graphml", xmlns="http://graphml.graphdrawing.org/xmlns")
    keys = [("label", "node", "string"), *((n, "node", t) for n, t in NODE_FIELDS)]
    keys += [("type", "edge", "string"), ("weight", "edge", "double")]
    for name, scope, typ in keys:
        ElementTree.SubElement(
            root, "key", {"id": f"{scope[0]}_{name}", "for": scope, "attr.name": name,
                          "attr.type": typ}
        )  # fmt: skip
    graph = ElementTree.SubElement(root, "graph", id=space, edgedefault="directed")
    for node in nodes:
        element = ElementTree.SubElement(graph, "node", id=names[node.id])
        for name, value in _attrs(node).items():
            ElementTree.SubElement(element, "data", key=f"n_{name}").text = _NOT_XML.sub(
                "", str(value)
            )
    for i, edge in enumerate(edges):
        element = ElementTree.SubElement(
            graph, "edge", id=f"e{i}", source=names[edge.src], target=names[edge.dst]
        )
        ElementTree.SubElement(element, "data", key="e_type").text = edge.type
        ElementTree.SubElement(element, "data", key="e_weight").text = repr(float(edge.weight))
    ElementTree.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(
        root, encoding="unicode"
    )


def _dot_quote(value: Any) -> str:
    text = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{text}"'


def _dot_lines(nodes: list[Node], edges: list[Edge], names: dict[int, str]) -> Iterator[str]:
    for node in nodes:
        attrs = {"label": _label(node), "kind": node.kind}
        for name in ("speaker", "session", "timestamp"):
            if getattr(node, name):
                attrs[name] = getattr(node, name)
        body = ", ".join(f"{k}={_dot_quote(v)}" for k, v in attrs.items())
        yield f"  {_dot_quote(names[node.id])} [{body}];"
    for edge in edges:
        body = f"label={_dot_quote(edge.type)}, weight={float(edge.weight)!r}"
        yield f"  {_dot_quote(names[edge.src])} -> {_dot_quote(names[edge.dst])} [{body}];"


def to_dot(nodes: list[Node], edges: list[Edge], names: dict[int, str], space: str) -> str:
    """A Graphviz digraph: nodes labelled by their text, edges by their type."""
    lines = [f"digraph {_dot_quote(space)} {{", "  node [shape=box];"]
    lines.extend(_dot_lines(nodes, edges, names))
    lines.append("}")
    return "\n".join(lines) + "\n"


def choose_format(fmt: str | None, json_mode: bool) -> str:
    """The export format for `--format` and `--json`: graphml by default, json with --json."""
    name = fmt.strip().lower() if fmt is not None else ("json" if json_mode else "graphml")
    if name not in FORMATS:
        raise UsageError(f"unknown graph format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if json_mode and name != "json":
        raise UsageError(
            f"--json prints the graph as JSON, so it cannot be combined with --format {name}",
            fix=f"drop --json to get {name}, or drop --format to get one line of JSON",
        )
    return name


def export_graph(mem: Memory, fmt: str = "graphml", compact: bool = False) -> str:
    """The space's nodes and edges in one of FORMATS (JSON on one line when `compact`)."""
    fmt = choose_format(fmt, json_mode=False)
    nodes, edges, names = _graph(mem)
    if fmt == "json":
        return to_json(nodes, edges, names, mem.space, compact=compact)
    return {"graphml": to_graphml, "dot": to_dot}[fmt](nodes, edges, names, mem.space)
