"""Subject groups in the packed context (no LLM): what the packed memories say about one
subject, oldest first with dates, the latest marked; within the word budget."""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

import pytest

from memcli.context.about import GROUP_HEADING, group_words
from memcli.context.pack import item_line, pack
from memcli.context.subjects import Subjects
from memcli.memory import Memory
from memcli.models import Hit, Node
from memcli.ops.answering import context_ids
from memcli.ops.ask import search_context
from memcli.retrieval import get_retriever
from memcli.text import word_count
from tests.cli_runner import Memcli
from tests.paths import DATA

MOVES = DATA / "knowledge" / "relocation.jsonl"
CAPS = {"fact": 60, "reflection": 20, "episode": 80}


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    """The relocation chat ingested and consolidated with --no-llm, full-text search only."""
    config = tmp_path / "memcli.yaml"
    config.write_text("embedding:\n  provider: none\nllm:\n  provider: none\n")
    cli = Memcli(config=config, db=tmp_path / "memory.db")
    cli.ok("ingest", MOVES)
    cli.ok("consolidate", "--no-llm", "--flush")
    return cli


def _section(context: str, subject: str) -> list[str]:
    """The lines of the group about `subject` (without its heading)."""
    heading = GROUP_HEADING.format(subject)
    assert heading in context, context
    return context.split(heading + "\n", 1)[1].split("\n\n", 1)[0].splitlines()


def test_what_is_said_about_a_subject_is_grouped_oldest_first_latest_marked(cli: Memcli) -> None:
    out = cli.ok("ask", "--context-only", "Where does Wren live now?").stdout
    lines = _section(out, "Wren")
    old = next(i for i, line in enumerate(lines) if "Alderbrook" in line)
    new = next(i for i, line in enumerate(lines) if "Pinecrest" in line)
    assert old < new == len(lines) - 1
    assert re.match(r"- \[ep\d+\] \(5 February 2023\) Wren: Hi Jory! I live in", lines[old])
    assert re.match(r"- \[ep\d+\] \(11 June 2023\) Wren: ", lines[new])
    assert lines[new].endswith(" (latest)")
    assert "[last month = May 2023]" in lines[new]  # the turn's time note goes with it
    assert sum(line.endswith("(latest)") for line in lines) == 1
    assert all(re.match(r"- \[ep\d+\] \(\d+ \w+ \d{4}\) ", line) for line in lines)
    for line in lines:  # a grouped turn is shown in its group, not twice
        node_id = line[3:].split("]", 1)[0]
        assert out.count(f"[{node_id}]") == 1, out
    assert "Jory: Pinecrest!" in out.split("## About")[0]  # the other turns stay in place
    # Jory names Wren to address her: that is not something said about Wren
    assert "Good luck with the move, Wren!" in out and not any("Good luck" in x for x in lines)
    assert {line[3:].split("]", 1)[0] for line in lines} <= context_ids(out)  # citable


def test_an_entity_the_question_names_is_grouped_from_the_turns_that_mention_it(
    cli: Memcli,
) -> None:
    [record] = cli.json("ask", "--context-only", "what is alderbrook like?")
    assert [g["subject"] for g in record["about"]] == ["Alderbrook"]
    said = record["about"][0]["statements"]
    assert len(said) == 2 and all("Alderbrook" in s["text"] for s in said)
    assert {s["speaker"] for s in said} == {"Wren", "Jory"}  # whoever said it


def test_json_and_the_python_api_carry_the_groups(cli: Memcli, tmp_path: Path) -> None:
    [record] = cli.json("ask", "--context-only", "Where does Wren live now?")
    [group] = [g for g in record["about"] if g["subject"] == "Wren"]
    said = group["statements"]
    assert [s["date"] for s in said] == sorted(s["date"] for s in said)
    assert [s["latest"] for s in said] == [False] * (len(said) - 1) + [True]
    assert "Pinecrest" in said[-1]["text"] and said[-1]["node_id"] in record["context"]
    with Memory.open(tmp_path / "memory.db", config=tmp_path / "memcli.yaml") as mem:
        answer = mem.ask("Where does Wren live now?", context_only=True)
    assert [g.to_dict() for g in answer.about] == record["about"]
    assert answer.context == record["context"]


def test_a_question_about_no_repeated_subject_packs_as_before(cli: Memcli, tmp_path: Path) -> None:
    question = "how is the quilt coming along?"
    with Memory.open(tmp_path / "memory.db", config=tmp_path / "memcli.yaml") as mem:
        answer = mem.ask(question, context_only=True)
        cfg = mem.cfg.retrieval
        ranked = get_retriever(cfg.strategy)(search_context(mem), question, cfg.pool)
        caps = {"fact": cfg.max_facts, "reflection": cfg.max_reflections,
                "episode": cfg.max_episodes}  # fmt: skip
        before = pack(ranked, cfg.word_budget, caps, question)
    assert answer.about == [] and answer.context == before.context
    assert "quilt" in answer.context and "## About" not in answer.context
    asked = cli.ok("ask", "--context-only", "Where does Wren live now?").stdout
    assert "## About Wren" in asked  # the same store does group when a subject is named


# -- packing itself, on hits made here ----------------------------------------------------


def _turn(i: int, text: str, day: int, speaker: str = "Sol") -> Hit:
    """Turn `i` (ranked i-th), said on the `day`-th day from 1 March 2023."""
    said = date(2023, 3, 1) + timedelta(days=day - 1)
    node = Node(i, "episode", "default", text, speaker=speaker, session=f"s{day}", seq=i,
                timestamp=f"{said.isoformat()}T09:00:00")  # fmt: skip
    return Hit(node, 1.0 / i)


def _turns(n: int, words: int = 30) -> list[Hit]:
    """`n` turns, the odd ones naming Harbin Vale, each `words` words long."""
    filler = " ".join(["pebble"] * (words - 4))
    return [
        _turn(i, f"{'Harbin Vale' if i % 2 else 'the bakery'} again {filler}", i)
        for i in range(1, n + 1)
    ]


def _about(hits: list[Hit], key: str, name: str, asked: bool = False) -> Subjects:
    subjects = Subjects(asked={key} if asked else set())
    for hit in hits:
        if name in hit.node.text:
            subjects.add(hit.node.id, key, name)
    return subjects


def _packed_words(hits: list[Hit], budget: int, subjects: Subjects) -> tuple[int, int]:
    """(words the packed context's items and groups take, groups) for one budget."""
    packed = pack(hits, budget, CAPS, "what about Harbin Vale", subjects)
    grouped = {s.node_id for g in packed.about for s in g.statements}
    lines = [h for h in packed.included if h.node.node_id not in grouped]
    used = sum(word_count(item_line(h)) for h in lines) + sum(map(group_words, packed.about))
    return used, len(packed.about)


@pytest.mark.parametrize("budget", [377, 995, 1860])  # 31-word lines leave little room
def test_what_groups_add_comes_out_of_the_word_budget(budget: int) -> None:
    hits = _turns(200)  # every line 31 words
    subjects = _about(hits, "harbin vale", "Harbin Vale")
    packed = pack(hits, budget, CAPS, "what about Harbin Vale", subjects)
    assert packed.about, packed.context  # many memories name it: a group
    plain = pack(hits, budget, CAPS, "what about Harbin Vale")
    assert len(packed.included) == len(plain.included) - 1  # its heading and dates paid for
    assert _packed_words(hits, budget, subjects)[0] <= budget


def test_the_packed_words_stay_within_every_budget() -> None:
    hits = _turns(60, words=17)
    subjects = _about(hits, "harbin vale", "Harbin Vale", asked=True)
    budgets = range(20, 1500, 23)
    found = {budget: _packed_words(hits, budget, subjects) for budget in budgets}
    assert all(used <= budget for budget, (used, _) in found.items())
    assert sum(n > 0 for _, n in found.values()) > len(found) // 2  # with groups, mostly


def test_a_subject_needs_several_memories_unless_the_question_names_it() -> None:
    hits = _turns(4)  # two of them name Harbin Vale
    subjects = _about(hits, "harbin vale", "Harbin Vale")
    assert pack(hits, 1000, CAPS, "the bakery", subjects).about == []
    named = _about(hits, "harbin vale", "Harbin Vale", asked=True)
    [group] = pack(hits, 1000, CAPS, "the bakery", named).about
    assert [s.node_id for s in group.statements] == ["ep1", "ep3"]
    hits = _turns(6)  # three name it
    assert [g.subject for g in pack(hits, 1000, CAPS, "x", _about(hits, "harbin vale",
            "Harbin Vale")).about] == ["Harbin Vale"]  # fmt: skip


def test_a_participants_name_earns_no_group_by_count_alone() -> None:
    hits = [_turn(i, f"Thanks, Sol! {word} is fine.", i, "Ivo") for i, word in
            enumerate(["Rain", "Sun", "Wind", "Snow"], start=1)]  # fmt: skip
    subjects = _about(hits, "sol", "Sol")
    subjects.participants = {"sol"}
    assert pack(hits, 1000, CAPS, "weather", subjects).about == []
    subjects.asked = {"sol"}
    assert [g.subject for g in pack(hits, 1000, CAPS, "where is Sol", subjects).about] == ["Sol"]


def test_superseded_facts_keep_their_validity_and_are_never_the_latest() -> None:
    old = Node(1, "fact", "default", "Sol lives in Harbin Vale", status="superseded",
               props={"valid_from": "2023-01-04", "valid_to": "2023-05-02",
                      "superseded_by": "fa2"})  # fmt: skip
    new = Node(2, "fact", "default", "Sol lives in Quarry End", status="active",
               props={"valid_from": "2023-05-02"})  # fmt: skip
    hits = [Hit(new, 1.0), Hit(old, 0.9), _turn(3, "Sol: the boxes are packed", 1)]
    subjects = _about(hits, "sol", "Sol", asked=True)
    packed = pack(hits, 1000, CAPS, "where does Sol live", subjects)
    [group] = packed.about
    assert [s.node_id for s in group.statements] == ["fa1", "ep3", "fa2"]
    facts = packed.context.split("## Facts\n", 1)[1].split("\n\n")[0].splitlines()
    assert [line.split("]")[0] for line in facts] == ["- [fa2", "- [fa1"]  # current first
    lines = _section(packed.context, "Sol")
    assert lines[0] == ("- [fa1] (4 January 2023) Sol lives in Harbin Vale "
                        "[superseded on 2 May 2023 by fa2]")  # fmt: skip
    assert lines[2] == "- [fa2] (2 May 2023) Sol lives in Quarry End (latest)"
    old.props["valid_from"] = "2023-06-01"  # a superseded fact dated after the current one
    [group] = pack(hits, 1000, CAPS, "where does Sol live", subjects).about
    assert [s.node_id for s in group.statements if s.latest] == ["fa2"]


def test_a_long_message_keeps_its_excerpt_size_beside_a_group() -> None:
    long = _turn(1, "Harbin Vale " + " ".join(f"w{i}" for i in range(900)), 1)
    hits = [long, *_turns(12)[1:]]
    subjects = _about(hits, "harbin vale", "Harbin Vale", asked=True)
    packed = pack(hits, 1000, CAPS, "Harbin Vale", subjects)
    plain = pack(hits, 1000, CAPS, "Harbin Vale")
    assert packed.about and packed.included[0].node.text == plain.included[0].node.text
    assert word_count(item_line(packed.included[0])) >= 1000 // 5 - 2  # "…" at one end only
