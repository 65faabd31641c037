"""`memcli inspect graph`: a space's whole graph as GraphML (Gephi), JSON or DOT (Graphviz).

Every node carries its public id (ep12, sg3, ...) so exports can be joined back to
`memcli inspect node ID`; every node carries its kind, text and the fields it has, and every
edge its type and weight.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.errors import UsageError
from memcli.graph import write_graph
from memcli.models import Edge, Node, node_public_id

if TYPE_CHECKING:
    from memcli.ops.base import MemoryBase

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


def _graph(mem: MemoryBase) -> tuple[list[Node], list[Edge], dict[int, str]]:
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


def _written(
    fmt: str, nodes: list[Node], edges: list[Edge], names: dict[int, str], space: str
) -> str:
    """GraphML (Gephi, yEd, igraph, networkx) or DOT (Graphviz), by igraph's writers.

    The public id is the vertex's `name` (igraph's naming attribute); a field a node lacks
    is an empty string (text) or NaN (numbers), which GraphML readers treat as absent.
    """
    index = {n.id: v for v, n in enumerate(nodes)}
    numeric = {name for name, typ in NODE_FIELDS if typ != "string"}
    vertices = []
    for n in nodes:
        attrs = _attrs(n)
        row: dict[str, Any] = {"name": names[n.id]}
        for name in ("label", *(f for f, _ in NODE_FIELDS)):
            value = attrs.get(name)
            if name in numeric:
                row[name] = float("nan") if value is None else value
            else:
                row[name] = _NOT_XML.sub("", value) if isinstance(value, str) else ""
        vertices.append(row)
    pairs = [(index[e.src], index[e.dst]) for e in edges]
    edge_attrs = [{"type": e.type, "label": e.type, "weight": float(e.weight)} for e in edges]
    return write_graph(fmt, space, vertices, pairs, edge_attrs)


SUFFIXES = {".graphml": "graphml", ".xml": "graphml", ".json": "json", ".dot": "dot", ".gv": "dot"}


def _from_suffix(fmt: str | None, output: Path | None) -> str | None:
    """The format an output file's suffix names; a suffix that names none, or another
    format than --format, is a usage error rather than a file of the wrong kind."""
    suffix = output.suffix.lower() if output is not None else ""
    if not suffix:
        return None
    named = SUFFIXES.get(suffix)
    choices = "pass --format graphml, json or dot, or name the file .graphml, .json or .dot"
    if named is None and fmt is None:
        raise UsageError(f"cannot tell a graph format from the suffix of {output}", fix=choices)
    if named is not None and fmt is not None and named != fmt.strip().lower():
        raise UsageError(
            f"--format {fmt} does not match the suffix of {output} ({named})", fix=choices
        )
    return named


def choose_format(fmt: str | None, json_mode: bool, output: Path | None = None) -> str:
    """The export format from `--format`, else the output file's suffix, else `--json`
    (json) or the default, graphml."""
    fallback = _from_suffix(fmt, output) or ("json" if json_mode else "graphml")
    name = fmt.strip().lower() if fmt is not None else fallback
    if name not in FORMATS:
        raise UsageError(f"unknown graph format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if json_mode and name != "json":
        raise UsageError(
            f"--json prints the graph as JSON, so it cannot be combined with --format {name}",
            fix=f"drop --json to get {name}, or drop --format to get one line of JSON",
        )
    return name


def export_graph(mem: MemoryBase, fmt: str = "graphml", compact: bool = False) -> str:
    """The space's nodes and edges in one of FORMATS (JSON on one line when `compact`)."""
    fmt = choose_format(fmt, json_mode=False)
    nodes, edges, names = _graph(mem)
    if fmt == "json":
        return to_json(nodes, edges, names, mem.space, compact=compact)
    return _written(fmt, nodes, edges, names, mem.space)
