"""Retrieval on user–assistant chats: question shapes, pronoun roles, and spreading broad
questions over sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcli.config import Config, EmbeddingConfig
from memcli.memory import Memory
from memcli.models import Node
from memcli.retrieval.shapes import Shape, ShapeParams, pronoun_roles
from memcli.retrieval.spread import interleave, spread
from tests.fakeserver import FakeModelServer
from tests.graph_helpers import Builder, embedding_config, memory


@pytest.mark.parametrize(
    ("question", "broad", "ordered", "summary"),
    [
        ("In what order did I bring up the garden projects?", True, True, False),
        ("How did my plans for the trip progress?", True, True, False),
        ("Can you summarize everything about my move?", True, False, True),
        ("How many books have I read in total?", True, False, False),
        ("What did I plant in order to attract bees?", False, False, False),
        ("Where is the spare key?", False, False, False),
    ],
)
def test_shapes_come_from_the_form_of_the_question(
    question: str, broad: bool, ordered: bool, summary: bool
) -> None:
    shape = Shape.of(question)
    assert (shape.broad, shape.ordered, shape.summary) == (broad, ordered, summary)
    if not broad:
        assert shape.topic == question


def test_the_topic_of_a_broad_question_drops_the_requested_form() -> None:
    shape = Shape.of(
        "Can you list the order in which I brought up my garden projects throughout our "
        "conversations (mention 4 items)?"
    )
    assert "garden projects" in shape.topic
    for form in ("order", "conversations", "mention", "items", "list", "brought up"):
        assert form not in shape.topic


def test_a_shape_rule_switched_off_neither_makes_a_question_broad_nor_trims_it() -> None:
    question = "Can you summarize everything about my move in total?"
    assert Shape.of(question).summary and "summarize" not in Shape.of(question).topic
    no_summary = Shape.of(question, ShapeParams(shape_summary=False))
    assert no_summary.broad and not no_summary.summary, "still a total"
    assert "summarize" in no_summary.topic
    quiet = Shape.of(question, ShapeParams(shape_summary=False, shape_aggregate=False))
    assert not quiet.broad and quiet.topic == question
    assert Shape.of(question, ShapeParams(shape_broad=False)) == quiet


def test_pronouns_name_the_user_or_the_assistant_only_in_a_chat_with_an_assistant() -> None:
    chat = ["assistant", "user"]
    assert pronoun_roles("What did I say about my garden?", chat) == {"user"}
    assert pronoun_roles("What did you recommend for the soil?", chat) == {"assistant"}
    assert pronoun_roles("How did you help me choose?", chat) == {"user", "assistant"}
    assert pronoun_roles("Can you tell me the date?", chat) == {"user"}  # "me"
    assert pronoun_roles("What did I say about my garden?", ["Ana", "Bo"]) == set()


def test_my_in_a_question_ranks_the_users_own_messages_first(tmp_path: Path) -> None:
    b = Builder(tmp_path / "m.db", vectors=False)
    turns = [
        ("user", "My tomatoes keep splitting after rain."),
        ("assistant", "Tomatoes split when watering is uneven; mulch and water tomatoes evenly."),
    ]
    for n, (speaker, text) in enumerate(turns):
        b.node("episode", text, speaker=speaker, session="s", seq=n)
    b.close()
    question = "What did I say about my tomatoes?"
    with memory(tmp_path / "m.db", None) as mem:
        cued = [h.node.speaker for h in mem.recall(question, k=2).hits]
    with memory(tmp_path / "m.db", None, {"hybrid": {"role": 0.0}}) as mem:
        plain = [h.node.speaker for h in mem.recall(question, k=2).hits]
    assert plain[0] == "assistant"  # says "tomatoes" twice
    assert cued[0] == "user"


def test_spread_takes_each_sessions_best_before_any_second() -> None:
    nodes = {
        1: Node(1, "episode", "d", "a", session="s1"),
        2: Node(2, "episode", "d", "b", session="s1"),
        3: Node(3, "episode", "d", "c", session="s2"),
        4: Node(4, "fact", "d", "d"),
        5: Node(5, "episode", "d", "e", session="s1"),
    }
    order = [(1, 0.9), (2, 0.8), (5, 0.7), (3, 0.6), (4, 0.5)]
    assert [i for i, _ in spread(order, nodes)] == [1, 3, 4, 2, 5]


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        ("What did I pay for the tent, the stove, and the lantern?",
         ("What did I pay for the tent", "the stove", "the lantern")),
        ("Did I pack socks, gloves or a hat for the trip?",
         ("Did I pack socks", "gloves", "a hat for the trip")),
        ("How many books have I read in total, poems, novels and essays together?",
         ("How many books have I read in total", "poems", "novels", "essays together")),
        ("What did I buy, and where did I go?", ()),  # two clauses, not a list
        ("Did I pack socks and gloves?", ()),
        ("Hey, where is the spare key?", ()),
        ("Can you summarize the tent, the stove, and the lantern?", ()),  # spread instead
        ("In what order did I buy the tent, the stove, and the lantern?", ()),
    ],
)  # fmt: skip
def test_an_enumeration_in_a_question_gives_one_part_per_item(
    question: str, parts: tuple[str, ...]
) -> None:
    assert Shape.of(question).parts == parts


def test_interleave_takes_every_rankings_best_before_any_second() -> None:
    whole = [(1, 0.9), (2, 0.8), (3, 0.7)]
    first = [(2, 0.5), (4, 0.4)]
    second = [(5, 0.6), (1, 0.3), (6, 0.2)]
    merged = interleave([whole, first, second])
    assert [i for i, _ in merged] == [1, 2, 5, 3, 4, 6]
    assert dict(merged)[2] == 0.5, "a memory keeps the score of the ranking that added it"
    assert interleave([]) == []


def test_each_item_of_an_enumeration_finds_its_own_evidence(
    tmp_path: Path, fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcli.retrieval import shapes

    fillers = ["bread", "piano", "garden", "taxes", "chess", "rain", "paint", "coffee"]
    lines = []
    for i in range(40):  # other subjects, so the question's words are not everywhere
        said = f"Notes on {fillers[i % 8]} number {i}, nothing else to add."
        lines.append({"id": f"f{i}", "role": "user", "session": f"f{i}", "content": said})
    for i in range(10):  # messages sharing most of the question's words
        said = f"How much did I pay for the tent, part {i} of the camping trip?"
        lines.append({"id": f"t{i}", "role": "user", "session": f"s{i}", "content": said})
        lines.append({"id": f"a{i}", "role": "assistant", "session": f"s{i}", "content": "Ok."})
    for ref, said in (("st", "The stove was 45 dollars."), ("la", "The lantern was 30 dollars.")):
        lines.append({"id": ref, "role": "user", "session": f"x{ref}", "content": said})
    mem = chat_memory(tmp_path, fake_server, lines)
    question = "How much did I pay on the camping trip for the tent, the stove, and the lantern?"
    refs = [h.node.ref for h in mem.ask(question, k=5, context_only=True).hits]
    assert {"st", "la"} <= set(refs), refs
    monkeypatch.setattr(shapes, "_parts", lambda text: ())
    refs = [h.node.ref for h in mem.ask(question, k=5, context_only=True).hits]
    assert not {"st", "la"} <= set(refs), "searched as a whole, the tent messages crowd them out"
    mem.close()


def chat_memory(tmp_path: Path, server: FakeModelServer, lines: list[dict[str, str]]) -> Memory:
    chat = tmp_path / "chat.jsonl"
    chat.write_text("\n".join(json.dumps(m) for m in lines) + "\n")
    emb = embedding_config(server)
    cfg = Config(db=str(tmp_path / "memory.db"), embedding=EmbeddingConfig(
        provider=emb.provider, model=emb.model, url=emb.url, max_retries=0))  # fmt: skip
    mem = Memory(cfg)
    mem.ingest([str(chat)])
    return mem
