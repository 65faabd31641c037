"""Why a hit ranked (memcli.retrieval.explain): `hybrid` fills Hit.why when asked, without
changing a score or the order, and `ask --explain` shows it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from memcli.models import Hit
from memcli.retrieval.explain import SIGNALS, label, ordered
from tests.cli_runner import Memcli
from tests.consolidate_helpers import opened
from tests.fakeserver import FakeModelServer
from tests.graph_helpers import Builder, memory
from tests.paths import REPO

QUESTIONS = (
    "When did Ana go to the woodturning class?",
    "what colour is the varnish",
    "In what order did the allotment plans progress?",
    "What about the canoe, the marathon, and the allotment?",
)


def ranking(hits: list[Hit]) -> list[tuple[str, float]]:
    return [(h.node.node_id, h.score) for h in hits]


@pytest.mark.parametrize("question", QUESTIONS)
def test_explained_scores_add_up_and_the_ranking_is_the_same(
    stores: object, tmp_path: Path, fake_server: FakeModelServer, question: str
) -> None:
    stores.copy("chat-no-llm", tmp_path / "memory.db")  # type: ignore[attr-defined]
    with opened(tmp_path, fake_server, llm=False) as mem:
        plain = mem.recall(question, k=12)
        explained = mem.recall(question, k=12, explain=True)
    assert ranking(explained.hits) == ranking(plain.hits)
    assert explained.context == plain.context
    assert all(h.why is None and h.via == [] for h in plain.hits)
    for hit in explained.hits:
        assert hit.why, hit.node.node_id
        assert hit.via == []  # every hit of hybrid is a direct match
        assert math.isclose(sum(hit.why.values()), hit.score, rel_tol=1e-9, abs_tol=1e-9)
        assert set(hit.why) <= set(SIGNALS)


def test_a_reply_shows_what_it_took_from_the_turn_it_answers(tmp_path: Path) -> None:
    b = Builder(tmp_path / "m.db", vectors=False)
    asked = b.node("episode", "What are you baking today?", session="s", seq=0, speaker="Ana")
    reply = b.node("episode", "A rye loaf with seeds.", session="s", seq=1, speaker="Ben")
    other = b.node("episode", "Rain all week here.", session="s", seq=2, speaker="Ana")
    b.chain([asked, reply, other])
    b.close()
    with memory(tmp_path / "m.db", None) as mem:
        hits = mem.recall("what are you baking", k=3, explain=True).hits
    by_id = {h.node.id: h for h in hits}
    assert reply in by_id, [h.node.text for h in hits]
    why = by_id[reply].why or {}
    # Its own words do not match: it ranks by the turn it answers.
    assert "fulltext" not in why and why["reply"] > 0
    assert by_id[asked].via == []  # a direct match


def test_rank_signals_count_each_list_from_its_best(tmp_path: Path) -> None:
    from memcli.retrieval.params import HybridParams

    RANK_OFFSET = HybridParams().rank_offset

    b = Builder(tmp_path / "m.db", vectors=False)
    best = b.node("episode", "Sourdough bread, sourdough bread!", session="s", seq=0)
    second = b.node("episode", "Fresh bread at the market.", session="t", seq=0)
    b.node("episode", "Rain all week here.", session="u", seq=0)
    b.close()
    with memory(tmp_path / "m.db", None) as mem:
        hits = {h.node.id: h for h in mem.recall("sourdough bread", k=3, explain=True).hits}
    weight = HybridParams().fulltext_rank
    assert (hits[best].why or {})["fulltext_rank"] == pytest.approx(weight / RANK_OFFSET)
    assert (hits[second].why or {})["fulltext_rank"] == pytest.approx(weight / (RANK_OFFSET + 1))
    assert "vector_rank" not in (hits[best].why or {})  # no embedder: no vector list
    assert label("fulltext_rank") == "full-text rank" and label("vector_rank") == "vector rank"


def test_labels_come_from_one_table_and_unknown_keys_show_by_name() -> None:
    assert label("reply") == "reply" and label("learned_bias") == "learned_bias"
    assert [k for k, _ in ordered({"zeta": 1.0, "vector": 0.2, "fulltext": 0.1})] == [
        "fulltext",
        "vector",
        "zeta",
    ]


# A signal declared as docs/retrieval.md shows ("Adding a signal to the default"), in a
# fresh process before anything reads the parameters: 1 for the latest turn of a session.
DECLARED = """
import json, sys
from memcli.retrieval.signals import Signals, signal

@signal("latest", label="latest turn", about="the last turn of its session", weight=0.5)
def _latest(q: Signals, memory: int) -> float:
    return float(q.nodes[memory].seq == 2)

from memcli.retrieval.explain import label, ordered
from memcli.retrieval.params import HybridParams
from memcli.retrieval.tuning import tuned
from tests.graph_helpers import memory

with memory(sys.argv[1], None, tuning={"hybrid": {"latest": 0.25}}) as mem:
    hits = mem.recall("bread", k=3, explain=True).hits
print(json.dumps({
    "default": HybridParams().latest,
    "tuned": tuned(HybridParams, {"latest": 2}, "hybrid").weights(),
    "label": label("latest"),
    "order": [k for k, _ in ordered({"latest": 1.0, "zeta": 1.0, "fulltext": 1.0})],
    "why": {h.node.seq: h.why for h in hits},
}))
"""


def test_a_signal_declared_once_is_weighed_tuned_and_explained(tmp_path: Path) -> None:
    b = Builder(tmp_path / "m.db", vectors=False)
    turns = ["Bread for the market.", "Rye bread again.", "More bread, warm bread."]
    b.chain([b.node("episode", t, session="s", seq=n) for n, t in enumerate(turns)])
    b.close()
    root = REPO
    run = subprocess.run(
        [sys.executable, "-c", DECLARED, str(tmp_path / "m.db")],
        capture_output=True, text=True, cwd=root, check=True,
    )  # fmt: skip
    found = json.loads(run.stdout)
    assert found["default"] == 0.5 and found["tuned"]["latest"] == 2.0
    assert list(found["tuned"])[-1] == "latest", "weights in the order declared"
    assert found["label"] == "latest turn"
    assert found["order"] == ["fulltext", "latest", "zeta"]
    why = found["why"]
    assert why["2"]["latest"] == pytest.approx(0.25), "the tuned weight x 1"
    assert "latest" not in why["0"] and "latest" not in why["1"]


def _cli(tmp_path: Path) -> Memcli:
    config = tmp_path / "memcli.yaml"
    config.write_text(f"db: {tmp_path / 'm.db'}\nembedding:\n  provider: none\n")
    chat = tmp_path / "c.jsonl"
    turns = ["The chess club meets at the library.", "Which day?", "On Tuesday evenings."]
    chat.write_text(
        "".join(json.dumps({"content": t, "role": r, "session": "s"}) + "\n"
                for t, r in zip(turns, ["Ana", "Ben", "Ana"], strict=True))
    )  # fmt: skip
    cli = Memcli(config=config)
    cli.ok("ingest", chat)
    return cli


def test_ask_explain_carries_why_and_via_in_json(tmp_path: Path) -> None:
    cli = _cli(tmp_path)
    [plain] = cli.json("ask", "--context-only", "-k", "3", "chess club")
    [explained] = cli.json("ask", "--context-only", "--explain", "-k", "3", "chess club")
    assert all("why" not in h and "via" not in h for h in plain["hits"])
    assert [h["node_id"] for h in explained["hits"]] == [h["node_id"] for h in plain["hits"]]
    first = explained["hits"][0]
    assert first["why"]["fulltext"] > 0 and first["via"] == []
    assert math.isclose(sum(first["why"].values()), first["score"], abs_tol=1e-5)
    # A strategy that does not explain itself gives the score alone.
    [lexical] = cli.json("ask", "--context-only", "--explain", "--strategy", "lexical", "chess")
    assert lexical["hits"] and all("why" not in h for h in lexical["hits"])


def test_ask_explain_in_text_lists_each_hit_with_its_parts(tmp_path: Path) -> None:
    result = _cli(tmp_path).ok("ask", "--context-only", "--explain", "-k", "2", "chess club")
    text = result.stdout
    assert "## Why these hits" in text
    why = text.split("## Why these hits\n", 1)[1].splitlines()
    assert len(why) == 2 and why[0].startswith("ep") and "= full-text " in why[0]
