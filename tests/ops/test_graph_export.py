"""`memcli inspect graph`: GraphML, JSON and DOT exports of a space's graph."""

from __future__ import annotations

import json
import math
import stat
from pathlib import Path
from xml.etree import ElementTree

import igraph
import pytest
from click.testing import Result

from memcli.config import Config, EmbeddingConfig
from memcli.errors import UsageError
from memcli.memory import Memory
from tests.cli_runner import Memcli
from tests.graph_helpers import Builder
from tests.paths import EXAMPLE
from tests.reliability import write_config

NS = {"g": "http://graphml.graphdrawing.org/xmlns"}


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    b = Builder(tmp_path / "g.db", vectors=False)
    first = b.node("episode", 'Ana said "hi" & left\nearly', speaker="Ana", ref="D1:1")
    second = b.node("episode", "Ben waved", speaker="Ben", ref="D1:2")
    segment = b.node("segment", "greetings")
    b.chain([first, second])
    b.edge(first, segment, "PART_OF")
    b.edge(second, segment, "PART_OF", 0.5)
    b.node("episode", "another space's turn")  # filler nodes live in space "filler"
    b.close()
    return tmp_path / "g.db"


def run(store_path: Path, *args: str) -> Result:
    return Memcli(db=store_path)("inspect", "graph", *args)


def export(store_path: Path, fmt: str) -> str:
    cfg = Config(db=str(store_path), embedding=EmbeddingConfig(provider="none"))
    with Memory(cfg) as mem:
        return mem.export_graph(fmt)


def test_graphml_is_valid_xml_with_nodes_edges_and_attributes(store_path: Path) -> None:
    root = ElementTree.fromstring(export(store_path, "graphml").encode())
    nodes = root.findall("g:graph/g:node", NS)
    edges = root.findall("g:graph/g:edge", NS)
    assert len(nodes) == 4 and len(edges) == 3
    # GraphML readers go by each key's attr.name; igraph names the key ids itself.
    names = {k.get("id"): k.get("attr.name") for k in root.findall("g:key", NS)}

    def data(element: ElementTree.Element) -> dict[str, str | None]:
        return {names[d.get("key")]: d.text for d in element.findall("g:data", NS)}

    assert data(root.find("g:graph", NS))["name"] == "default"
    ids = [data(n)["name"] for n in nodes]
    assert all(i.startswith(("ep", "sg")) for i in ids)
    values = data(nodes[0])
    assert values["kind"] == "episode" and values["speaker"] == "Ana"
    assert values["text"] == 'Ana said "hi" & left\nearly'
    types = sorted(data(e)["type"] for e in edges)
    assert types == ["NEXT", "PART_OF", "PART_OF"]
    vertex = {n.get("id"): data(n)["name"] for n in nodes}
    assert {vertex[e.get("source")] for e in edges} <= set(ids)


def test_json_has_nodes_and_edges_by_public_id(store_path: Path) -> None:
    doc = json.loads(export(store_path, "json"))
    assert doc["space"] == "default"
    kinds = sorted(n["kind"] for n in doc["nodes"])
    assert kinds == ["episode", "episode", "episode", "segment"]
    ids = {n["id"] for n in doc["nodes"]}
    weights = {(e["type"], e["weight"]) for e in doc["edges"]}
    assert weights == {("NEXT", 1.0), ("PART_OF", 1.0), ("PART_OF", 0.5)}
    assert all(e["source"] in ids and e["target"] in ids for e in doc["edges"])


def test_dot_is_a_digraph_with_escaped_labels(store_path: Path) -> None:
    text = export(store_path, "dot")
    assert "digraph {" in text and "name=default" in text
    assert text.rstrip().endswith("}")
    assert 'label="Ana said \\"hi\\" & left early"' in text  # quotes escaped, one line
    assert text.count(" -> ") == 3
    assert "label=PART_OF\n    weight=0.5" in text


def test_unknown_format_is_a_usage_error(store_path: Path) -> None:
    with pytest.raises(UsageError):
        export(store_path, "csv")


def test_cli_graphml_to_stdout(store_path: Path) -> None:
    result = run(store_path)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert ElementTree.fromstring(result.stdout.encode()).tag == f"{{{NS['g']}}}graphml"


def test_cli_json_and_dot(store_path: Path) -> None:
    as_json = run(store_path, "--format", "json")
    assert as_json.exit_code == 0 and as_json.stderr == ""
    assert len(json.loads(as_json.stdout)["edges"]) == 3
    as_dot = run(store_path, "--format", "DOT")
    assert as_dot.exit_code == 0 and "digraph {" in as_dot.stdout


def test_cli_output_file(store_path: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    result = run(store_path, "--format", "json", "-o", str(target))
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "wrote" in result.stderr
    assert json.loads(target.read_text())["space"] == "default"


def test_cli_bad_format_exits_2(store_path: Path) -> None:
    result = run(store_path, "--format", "csv")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "unknown graph format 'csv'" in result.stderr


def test_cli_empty_store_exports_an_empty_graph(tmp_path: Path) -> None:
    Builder(tmp_path / "e.db", vectors=False).close()
    result = run(tmp_path / "e.db", "--space", "nobody", "--format", "json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"space": "nobody", "nodes": [], "edges": []}


def test_cli_unknown_space_names_the_spaces(store_path: Path) -> None:
    result = run(store_path, "--space", "fille", "--format", "json")
    assert result.exit_code == 4 and result.stdout == ""
    assert "did you mean 'filler'" in result.stderr and "default, filler" in result.stderr


# `inspect graph -o` (and every other file memcli writes on request) is readable by its
# owner only, like the store and exports: it holds the memory's text.


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_graph_files_are_private(tmp_path: Path) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    for name in ("g.graphml", "g.json", "g.dot"):
        cli.ok("inspect", "graph", "-o", tmp_path / name)
        assert mode(tmp_path / name) == 0o600, name
    shared = tmp_path / "shared.json"
    shared.write_text("{}")
    shared.chmod(0o644)  # an older file is made private when it is written again
    cli.ok("inspect", "graph", "-o", shared)
    assert mode(shared) == 0o600
    cli.ok("export", "-o", tmp_path / "dump.jsonl")
    assert mode(tmp_path / "dump.jsonl") == 0o600


# The GraphML export read back by igraph: every node, edge and attribute survives.

EDGE_KEYS = ("type", "weight")


@pytest.fixture
def graphml_store(tmp_path: Path) -> Path:
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
    graphml_store: Path, tmp_path: Path
) -> None:
    path = tmp_path / "g.graphml"
    path.write_text(exported(graphml_store, "graphml"), encoding="utf-8")
    graph = igraph.Graph.Read_GraphML(str(path))
    doc = json.loads(exported(graphml_store, "json"))
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


# `inspect graph -o FILE`: the format follows the file's suffix, and a suffix it cannot honour
# is a usage error that writes nothing.


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    """memcli over tmp_path/m.db with embeddings off."""
    write_config(tmp_path)
    return Memcli(config=tmp_path / "memcli.yaml", db=tmp_path / "m.db")


@pytest.mark.parametrize(
    ("name", "first"), [("g.json", "{"), ("g.dot", "/*"), ("g.graphml", "<?xml"), ("g", "<?xml")]
)
def test_graph_export_format_follows_the_suffix(
    cli: Memcli, tmp_path: Path, name: str, first: str
) -> None:
    cli.ok("-q", "ingest", EXAMPLE)
    cli.ok("inspect", "graph", "-o", tmp_path / name)
    written = (tmp_path / name).read_text()
    assert written.startswith(first), written[:40]
    if name == "g.json":
        assert len(json.loads(written)["nodes"]) == 16


def test_graph_export_refuses_a_suffix_it_cannot_honour(cli: Memcli, tmp_path: Path) -> None:
    cli.ok("-q", "ingest", EXAMPLE)
    for args in (["-o", tmp_path / "g.txt"], ["--format", "dot", "-o", tmp_path / "g.json"]):
        result = cli("inspect", "graph", *args)
        assert result.exit_code == 2 and result.stdout == "", result.stderr
        assert "suffix" in result.stderr and "\n  fix: " in result.stderr
    assert not (tmp_path / "g.txt").exists() and not (tmp_path / "g.json").exists()
