"""The GraphML export read back by igraph: every node, edge and attribute survives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import igraph
import pytest

from memcli.config import Config, EmbeddingConfig
from memcli.memory import Memory
from tests.graph_helpers import Builder

EDGE_KEYS = ("type", "weight")


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    b = Builder(tmp_path / "g.db", vectors=False)
    first = b.node(
        "episode", 'Ann: "tea" & <cake>\nlater\x07', speaker="Ann", session="s1", seq=0,
        timestamp="2024-05-01T10:00:00", ref="D1:1",
    )  # fmt: skip
    second = b.node("episode", "Bo: café ☕", speaker="Bo", session="s1", seq=1)
    segment = b.node("segment", "a chat about tea")
    fact = b.node("fact", "Ann likes tea", belief=0.75, status="active")
    b.chain([first, second])
    b.edge(first, segment, "PART_OF")
    b.edge(second, segment, "PART_OF", 0.25)
    b.edge(fact, first, "DERIVED_FROM", 0.5)
    b.close()
    return tmp_path / "g.db"


def exported(store_path: Path, fmt: str) -> str:
    cfg = Config(db=str(store_path), embedding=EmbeddingConfig(provider="none"))
    with Memory(cfg) as mem:
        return mem.export_graph(fmt)


def same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True  # igraph fills a numeric attribute a node lacks with NaN
    return a == b


def test_graphml_loads_into_igraph_with_the_json_exports_nodes_and_edges(
    store_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "g.graphml"
    path.write_text(exported(store_path, "graphml"), encoding="utf-8")
    graph = igraph.Graph.Read_GraphML(str(path))
    doc = json.loads(exported(store_path, "json"))
    assert graph.is_directed()
    assert (graph.vcount(), graph.ecount()) == (len(doc["nodes"]), len(doc["edges"])) == (4, 4)
    for vertex, node in zip(graph.vs, doc["nodes"], strict=True):
        assert vertex["name"] == node["id"]
        for key, value in node.items():
            if key not in ("id", "props"):
                expected = value.replace("\x07", "") if isinstance(value, str) else value
                assert same(vertex[key], expected), (node["id"], key)
        for key in set(graph.vs.attributes()) - set(node) - {"name"}:  # what the node does not have
            assert vertex[key] in ("", None) or math.isnan(vertex[key]), (node["id"], key)
    ids = graph.vs["name"]
    pairs = [(ids[e.source], ids[e.target], e["type"], e["weight"]) for e in graph.es]
    assert pairs == [(e["source"], e["target"], e["type"], e["weight"]) for e in doc["edges"]]
