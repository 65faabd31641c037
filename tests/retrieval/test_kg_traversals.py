"""The PersonalAI traversals on small hand-made graphs (memcli.retrieval.kg and friends)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memcli.retrieval.astar import shortest_path
from memcli.retrieval.beam import beam_credit, paths_from
from memcli.retrieval.kg import KnowledgeGraph
from memcli.retrieval.watercircles import circle_credit, rings
from tests.retrieval.test_retrieval_graph import ingested, refs


def graph(
    edges: list[tuple[int, int]], relevance: dict[int, float], **kw: object
) -> KnowledgeGraph:
    kinds = {n: "episode" for e in edges for n in e}
    kinds.update({n: "entity" for n in kw.get("entities", {})})  # type: ignore[union-attr]
    kg = KnowledgeGraph(kinds, dict(kw.get("entities", {})),  # type: ignore[arg-type]
                        list(kw.get("memories", [])), relevance)  # type: ignore[arg-type]  # fmt: skip
    for a, b in edges:
        kg.adjacent.setdefault(a, set()).add(b)
        kg.adjacent.setdefault(b, set()).add(a)
    return kg


def test_beam_follows_relevant_nodes_and_never_revisits() -> None:
    # 1 - 2 - 4 (relevant) and 1 - 3 - 5 (irrelevant); 4 - 1 would close a loop.
    kg = graph([(1, 2), (2, 4), (1, 3), (3, 5), (4, 1)], {1: 1.0, 2: 0.5, 3: 0.1, 4: 0.9, 5: 0.0})
    paths = paths_from(kg, 1, depth=3, width=1, alpha=0.75)
    assert len(paths) == 1 and paths[0].nodes[:3] == (1, 4, 2)
    assert all(len(set(p.nodes)) == len(p.nodes) for p in paths_from(kg, 1, 3, 5, 0.75))


def test_beam_paths_of_one_start_do_not_step_onto_one_node() -> None:
    kg = graph([(1, 2), (1, 3), (2, 4), (3, 4)], {1: 1.0, 2: 0.5, 3: 0.5, 4: 1.0})
    paths = paths_from(kg, 1, depth=2, width=5, alpha=0.5)
    ends = [p.nodes[-1] for p in paths if len(p.nodes) == 3]
    assert ends == [4]  # the second path to 4 was not kept


def test_beam_credit_is_relative_to_the_best_path() -> None:
    kg = graph([(1, 2), (2, 3)], {1: 1.0, 2: 0.8, 3: 0.2}, memories=[1])
    credit = beam_credit(kg, depth=2, width=3, alpha=0.75)
    assert max(credit.values()) == 1.0 and set(credit) == {1, 2, 3}


def test_watercircles_rank_where_rings_meet_first() -> None:
    # Entities 10 and 20; memory 1 mentions both, memory 2 only 10, memory 3 only 20.
    kg = graph([(10, 1), (20, 1), (10, 2), (20, 3)], {1: 0.1, 2: 0.9, 3: 0.5},
               entities={10: 1.0, 20: 0.8})  # fmt: skip
    assert rings(kg, 1)[1] == {10, 20}
    credit = circle_credit(kg, depth=1, chain=5, other=1)
    assert credit == {1: 1.0, 2: 0.5}  # 3 is the less relevant secondary memory


def test_astar_finds_a_shortest_path_within_its_limits() -> None:
    kg = graph([(1, 2), (2, 3), (3, 4), (1, 5), (5, 6), (6, 4)], {})
    unit = {n: np.array([1.0, 0.0]) for n in range(1, 7)}
    path = shortest_path(kg, unit, (1, 4), (10, 150))
    assert path is not None and path[0] == 1 and path[-1] == 4 and len(path) == 4
    assert shortest_path(kg, unit, (1, 4), (2, 150)) is None  # deeper than allowed
    assert shortest_path(kg, {}, (1, 4), (10, 1)) is None  # gave up after one node


def test_session_discount_spreads_hits_over_sessions(tmp_path: Path) -> None:
    question = "marathon run Lisbon Porto bread"
    with ingested(tmp_path / "plain", None) as mem:
        plain = refs(mem.ask(question, strategy="beam", k=2, context_only=True).hits)
    with ingested(tmp_path / "spread", None, {"beam": {"kg_session_discount": 0.1}}) as mem:
        spread = refs(mem.ask(question, strategy="beam", k=2, context_only=True).hits)
    assert sorted(plain) == ["b1", "b2"]  # both marathon turns are in session s2
    assert spread[0] == plain[0] and spread[1].startswith("a")  # the next best is from s1
