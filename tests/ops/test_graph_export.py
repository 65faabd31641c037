"""`memcli inspect graph`: GraphML, JSON and DOT exports of a space's graph."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import Result

from memcli.config import Config, EmbeddingConfig
from memcli.errors import UsageError
from memcli.memory import Memory
from tests.cli_runner import Memcli
from tests.graph_helpers import Builder

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
