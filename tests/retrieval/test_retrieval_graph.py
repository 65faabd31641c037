"""The graph strategies (hybrid, dwpr, gam) on episode-only and consolidated-shape stores."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from memcli.context.pack import pack
from memcli.eval.metrics import ranked_refs
from memcli.memory import Memory
from memcli.models import Hit, Node
from memcli.ops.ask import search_context
from memcli.retrieval import get_retriever, strategy_names
from memcli.retrieval.cues import Cues, named_people, time_bearing
from memcli.retrieval.shapes import is_temporal
from memcli.store import open_store
from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer
from tests.graph_helpers import CONVERSATION, memory, write_jsonl
from tests.stores import StoreCache

GRAPH_STRATEGIES = ("hybrid", "dwpr", "gam", "beam", "watercircles", "astar")


def ingested(
    tmp_path: Path, server: FakeModelServer | None, tuning: dict[str, Any] | None = None
) -> Memory:
    mem = memory(tmp_path / "m.db", server, tuning)
    mem.ingest([str(write_jsonl(tmp_path / "c.jsonl", CONVERSATION))])
    return mem


def refs(hits: list[Hit]) -> list[str]:
    return ranked_refs(hits)


def test_registry_lists_the_graph_strategies() -> None:
    assert set(GRAPH_STRATEGIES) <= set(strategy_names())


@pytest.mark.parametrize("strategy", GRAPH_STRATEGIES)
def test_each_strategy_answers_on_an_episode_only_store(
    tmp_path: Path, fake_server: FakeModelServer, strategy: str
) -> None:
    with ingested(tmp_path, fake_server) as mem:
        answer = mem.ask("Who runs the Lisbon marathon?", strategy=strategy, k=3, context_only=True)
    # dwpr ranks by PageRank alone, and astar credits a turn for the paths between the best
    # matches that pass through it: in this three-turn session the middle turn, which the
    # turns on both sides feed and whose context names the marathon in Lisbon, may lead.
    assert answer.hits and "b1" in refs(answer.hits)[: 2 if strategy in ("dwpr", "astar") else 1]
    assert all(h.node.kind == "episode" for h in answer.hits)
    scores = [h.score for h in answer.hits]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("strategy", GRAPH_STRATEGIES)
def test_each_strategy_works_without_embeddings(tmp_path: Path, strategy: str) -> None:
    with ingested(tmp_path, None) as mem:
        answer = mem.ask("sourdough bread market", strategy=strategy, k=3, context_only=True)
        assert refs(answer.hits)[0] == "a5"
        assert mem.ask("zzz qqq", strategy=strategy, context_only=True).hits == []


@pytest.mark.parametrize("strategy", GRAPH_STRATEGIES)
def test_an_empty_store_gives_no_hits(tmp_path: Path, strategy: str) -> None:
    with memory(tmp_path / "m.db", None) as mem:
        assert mem.ask("anything at all", strategy=strategy, context_only=True).hits == []


def test_the_answer_to_a_matching_question_is_retrieved(tmp_path: Path) -> None:
    # "Tidal energy ..." shares no word with the question; it follows the turn that does.
    question = "Which research topic did Bo pick for the thesis?"
    # (The role cue is off: the question names Bo, whose turn the answer is.)
    with ingested(tmp_path, None, {"hybrid": {"role": 0.0}}) as mem:
        with_replies = refs(mem.ask(question, strategy="hybrid", k=2, context_only=True).hits)
    off = {"hybrid": {"role": 0.0, "reply": 0.0}}
    with ingested(tmp_path / "off", None, off) as mem:
        without = refs(mem.ask(question, strategy="hybrid", k=2, context_only=True).hits)
    assert with_replies[:2] == ["a3", "a4"]
    assert "a4" not in without[:1]


def _narrow(strategy: str, **hybrid: object) -> dict[str, Any]:
    """Tuning that keeps a strategy to its first candidates (no graph around them)."""
    tuning: dict[str, Any] = {"hybrid": dict(hybrid)}
    if strategy in ("dwpr", "beam", "watercircles", "astar"):
        tuning[strategy] = {"expand_depth": 0} if strategy != "dwpr" else {"max_subgraph": 1}
    return tuning


@pytest.mark.parametrize("strategy", GRAPH_STRATEGIES)
def test_a_reply_to_a_matching_question_is_never_dropped(tmp_path: Path, strategy: str) -> None:
    # Kept to the first candidates, the reply is still found by its turn context (its own
    # words share none with the question, nor does it name its speaker).
    question = "Which research topic was picked for the thesis?"
    with ingested(tmp_path, None, _narrow(strategy)) as mem:
        got = refs(mem.ask(question, strategy=strategy, k=8, context_only=True).hits)
    assert "a4" in got


@pytest.mark.parametrize("strategy", [*GRAPH_STRATEGIES, "semantic"])
def test_k_beyond_the_nearest_neighbour_limit(
    tmp_path: Path, fake_server: FakeModelServer, strategy: str
) -> None:
    with ingested(tmp_path, fake_server) as mem:
        hits = mem.ask("marathon", strategy=strategy, k=5000, context_only=True).hits
    assert len(hits) == len(CONVERSATION)


def consolidated(stores: StoreCache, tmp_path: Path, vectors: bool = False) -> dict[str, int]:
    """A copy of the hand-built consolidated store (`tests.graph_helpers.consolidated_graph`)
    at tmp_path/g.db; returns its node ids by name."""
    name = "consolidated-graph-vectors" if vectors else "consolidated-graph"
    return stores.copy(name, tmp_path / "g.db").info["ids"]


@pytest.mark.parametrize("strategy", GRAPH_STRATEGIES)
def test_each_strategy_on_a_consolidated_store(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer, strategy: str
) -> None:
    consolidated(stores, tmp_path, vectors=True)
    with memory(tmp_path / "g.db", fake_server) as mem:
        hits = mem.ask("Bo greyhound Biscuit", strategy=strategy, k=6, context_only=True).hits
    kinds = {h.node.kind for h in hits}
    assert kinds <= {"episode", "fact", "reflection"}  # organisers lead to memories
    assert "e1" in refs(hits)[:3]
    fact = next((h for h in hits if h.node.kind == "fact"), None)
    assert fact is not None and fact.sources == ["e1"]


def test_gam_drills_down_from_a_topic_to_its_turns(stores: StoreCache, tmp_path: Path) -> None:
    consolidated(stores, tmp_path)
    with memory(tmp_path / "g.db", None, {"hybrid": {"candidates": 1}}) as mem:
        ctx = search_context(mem)
        hits = get_retriever("gam")(ctx, "new pet dog habits", 10)
    # Only the segment matches the words; its turns come from the drill-down.
    assert {"e1", "e2", "e3"} <= set(refs(hits))
    assert "e4" not in refs(hits)


@pytest.mark.parametrize("strategy", ["hybrid", "gam"])
def test_role_cue_prefers_the_named_speaker(tmp_path: Path, strategy: str) -> None:
    question = "Did Ana talk about the marathon in Lisbon?"
    off = {"hybrid": {"role": 0.0}, "gam": {"beta_role": 1.0}}
    on = {"hybrid": {"role": 3.0}} if strategy == "hybrid" else {**off, "gam": {"beta_role": 3.0}}
    with ingested(tmp_path, None, off) as mem:
        plain = get_retriever(strategy)(search_context(mem), question, 2)
        mem.cfg = dataclasses.replace(
            mem.cfg, retrieval=dataclasses.replace(mem.cfg.retrieval, tuning=on)
        )
        cued = get_retriever(strategy)(search_context(mem), question, 2)
    assert refs(plain)[0] == "b1"  # Bo's turn matches "marathon in Lisbon" best...
    assert refs(cued)[0] == "b2"  # ...but the question asks about Ana's


def test_gam_cue_detection() -> None:
    assert is_temporal("When did Alexandra go to the chess club?")
    assert is_temporal("How long has Bo lived in Porto?")
    assert not is_temporal("What did Ana research?")
    assert named_people("What did alexandra say to Osk?", ["Alexandra", "Oskar"]) == {"alexandra"}
    assert named_people("Where does Tom Smith work?", ["Tom Smith"]) == {"tom smith"}
    assert named_people("What is it about?", ["Bo"]) == set()  # "about" does not name Bo
    assert named_people("What did Bo's and James' dogs eat?", ["Bo", "James"]) == {"bo", "james"}


def test_cue_factors() -> None:
    bo = Node(1, "episode", "d", "I moved to Porto in May", speaker="Bo")
    ana = Node(2, "episode", "d", "nice flat", speaker="Ana")
    fact = Node(3, "fact", "d", "Bo lives in Porto", belief=0.9)
    cues = Cues.of("When did Bo move?", [bo, ana], beta_time=1.5, beta_role=2.0, beta_conf=1.2,
                   min_belief=0.8)  # fmt: skip
    assert cues.people == {"bo"} and cues.temporal
    assert cues.factor(bo) == pytest.approx(3.0)  # dated, and Bo's own turn
    assert cues.factor(ana) == 1.0
    assert cues.factor(fact) == pytest.approx(2.0 * 1.2)  # names Bo, believed
    plain = Cues.of("What is Ana's flat like?", [bo, ana], beta_time=1.5, beta_role=2.0)
    assert plain.factor(bo) == 1.0 and plain.factor(ana) == 2.0
    assert plain.naming(["bo"]).factor(bo) == 2.0


def test_time_bearing_memories(
    stores: StoreCache,
) -> None:
    dated = Node(1, "episode", "d", "we met in March 2021")
    relative = Node(2, "episode", "d", "it rained", props={"time_refs": [{"text": "x"}]})
    plain = Node(3, "episode", "d", "we met at the park")
    assert time_bearing(dated) and time_bearing(relative) and not time_bearing(plain)


def consolidated_hits(
    stores: StoreCache, tmp_path: Path, query: str, k: int
) -> tuple[list[Hit], dict[str, int]]:
    """hybrid's hits for a query on the hand-built consolidated store, and its node ids."""
    ids = consolidated(stores, tmp_path)
    with memory(tmp_path / "g.db", None) as mem:
        return get_retriever("hybrid")(search_context(mem), query, k), ids


def test_pack_keeps_ids_sections_and_time_order(stores: StoreCache, tmp_path: Path) -> None:
    hits, ids = consolidated_hits(stores, tmp_path, "Bo greyhound Biscuit sofa", 10)
    packed = pack(hits, budget=1000, caps={"fact": 60, "reflection": 20, "episode": 80})
    text = packed.context
    assert text.index("## Facts") < text.index("## Conversation excerpts")
    assert f"[fa{ids['fact']}] Bo owns a greyhound" in text
    assert text.index(f"[ep{ids['e1']}]") < text.index(f"[ep{ids['e3']}]")  # time order
    assert "### s1 — Mon 8 May 2023, 10:00" in text
    assert "Bo: I rescued" in text
    capped = pack(hits, budget=1000, caps={"fact": 0, "reflection": 0, "episode": 1})
    assert [h.node.kind for h in capped.included] == ["episode"]


def test_pack_cuts_the_best_hit_rather_than_returning_nothing(
    stores: StoreCache, tmp_path: Path
) -> None:
    from memcli.context.pack import item_line

    hits, _ids = consolidated_hits(stores, tmp_path, "greyhound Biscuit", 5)
    packed = pack(hits, budget=6, caps={"fact": 60, "reflection": 20, "episode": 80})
    assert len(packed.included) == 1 and packed.included[0].node.id == hits[0].node.id
    line = item_line(packed.included[0])
    assert len(line.split()) <= 6 and line.endswith("…") and line in packed.context
    assert hits[0].node.text.split()[0] in line
    assert pack([], budget=6, caps={}).context == ""


@pytest.mark.parametrize("strategy", GRAPH_STRATEGIES)
def test_cli_ask_with_each_graph_strategy(tmp_path: Path, strategy: str) -> None:
    config = tmp_path / "memcli.yaml"
    config.write_text(f"db: {tmp_path / 'm.db'}\nembedding:\n  provider: none\n")
    cli = Memcli(config=config)
    cli.ok("ingest", write_jsonl(tmp_path / "c.jsonl", CONVERSATION))
    args = ["--json", "ask", "--context-only", "-k", "2"]
    result = cli(*args, "--strategy", strategy, "climbing at the quarry")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    out = json.loads(result.stdout)
    assert out["hits"][0]["ref"] == "a2"
    assert "[yesterday = 7 May 2023]" in out["context"]
    typo = cli(*args, "--strategy", "gamm", "quarry")
    assert typo.exit_code == 2  # a bad flag value is a usage error
    assert "did you mean 'gam'" in typo.stderr and typo.stdout == ""


def test_memories_rest_on_the_segments_of_their_source_turns(
    stores: StoreCache, tmp_path: Path
) -> None:
    ids = consolidated(stores, tmp_path)
    with open_store(tmp_path / "g.db") as store:
        found = store.segments_of([ids[r] for r in ("e1", "e4", "fact", "refl", "seg", "concept")])
    # A turn in its segment; a fact through its source turn; a reflection through its fact.
    assert found == {ids["e1"]: [ids["seg"]], ids["fact"]: [ids["seg"]], ids["refl"]: [ids["seg"]]}
