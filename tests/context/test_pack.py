"""Packing: long messages in the packed context (passages, the excerpt around what matched,
and -k bounding what is packed: a huge message is cut with a marker, never silently left
out), and derived memories packed within words of their own."""

from __future__ import annotations

import json
import re
from pathlib import Path

from memcli.context.excerpt import bag_score, matched_span
from memcli.context.pack import item_line, pack
from memcli.context.passages import passages
from memcli.models import Hit, Node
from tests.cli_runner import Memcli
from tests.graph_helpers import write_jsonl

CAPS = {"fact": 60, "reflection": 20, "episode": 80}


def filler(n: int, seed: str = "plain") -> str:
    return " ".join(f"{seed}{i % 17} words here." for i in range(n))


def test_passages_overlap_and_keep_a_code_block_whole() -> None:
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(20)) + "\n```"
    text = f"{filler(60)}\n\n{code}\n\n{filler(60, 'more')}"
    spans = passages(text, 120, 20)
    assert len(spans) >= 3
    assert any(code in text[a:b] for a, b in spans), "the fence is whole in one passage"
    assert all(b > a for a, b in spans) and spans[0][0] == 0 and spans[-1][1] == len(text)
    starts = [a for a, _ in spans]
    assert all(spans[i][1] > starts[i + 1] for i in range(len(spans) - 1) if i != 0), "overlap"
    assert passages("short text", 120, 20) == []


def test_the_matched_passage_is_where_the_rare_question_words_are() -> None:
    text = f"{filler(200)} The boiler pressure valve was replaced on site. {filler(200)}"
    a, b = matched_span(text, "when was the boiler valve replaced?") or (0, 0)
    assert "boiler pressure valve" in text[a:b]
    assert matched_span("a short message", "boiler") is None


def test_a_long_message_is_shown_around_what_matched_with_a_marker() -> None:
    text = f"{filler(400)} The boiler pressure valve was replaced on site. {filler(400)}"
    hit = Hit(Node(7, "episode", "default", text, speaker="assistant", session="s1"), 1.0)
    packed = pack([hit], 1000, CAPS, "boiler valve")
    assert "boiler pressure valve" in packed.context
    assert re.search(r"\[excerpt: words [\d,]+–[\d,]+ of 2,408\]", packed.context)
    assert len(item_line(packed.included[0]).split()) <= 200
    assert packed.included[0].node.text.startswith("… ")
    first = pack([hit], 1000, CAPS).included[0].node.text  # no question: the opening
    assert first.startswith(text[:20]) and "boiler" not in first


def test_k_bounds_the_packed_context_and_a_huge_message_is_cut_not_dropped(
    tmp_path: Path,
) -> None:
    config = tmp_path / "memcli.yaml"
    config.write_text(f"db: {tmp_path / 'm.db'}\nembedding:\n  provider: none\n")
    cli = Memcli(config=config)
    huge = f"{filler(24_000)} The spare key hides under the blue flowerpot. {filler(24_000)}"
    assert 900_000 < len(huge.encode()) < 1_000_000  # the largest record ingest takes
    turns = [{"id": "big", "role": "assistant", "session": "s1", "content": huge}]
    turns += [
        {"id": f"t{i}", "role": "user", "session": "s1", "content": f"Where is the spare key {i}?"}
        for i in range(6)
    ]
    cli.ok("ingest", write_jsonl(tmp_path / "c.jsonl", turns))
    out = json.loads(
        cli.ok("--json", "ask", "--context-only", "-k", "3", "spare key flowerpot").stdout
    )
    context = out["context"]
    assert len(out["hits"]) == 3
    assert len(re.findall(r"^(?:- )?\[ep\d+\]", context, re.M)) <= 3, "-k bounds what is packed"
    big = next(h for h in out["hits"] if h["ref"] == "big")
    assert f"[{big['node_id']}]" in context, "the huge message is in the context"
    assert "blue flowerpot" in context and "[excerpt: words" in context
    assert len(context.split()) <= 1000


def test_a_passage_score_does_not_depend_on_the_order_of_its_words() -> None:
    # A set of words iterates in an order that changes with the hash seed; floating-point
    # sums in two orders can differ in the last bit and break a near tie either way.
    weight = {"a": 0.1, "b": 0.2, "c": 0.3}
    assert bag_score(["a", "b", "c"], weight) == bag_score(["c", "b", "a"], weight)


# Facts and reflections are packed within words of their own: however many a model derived,
# and however well they rank, the turns in the context are those packed without them.


def _hit(node_id: int, kind: str, text: str, score: float) -> Hit:
    return Hit(Node(node_id, kind, "default", text, speaker="Ana" if kind == "episode" else None),
               score)  # fmt: skip


def _ranked() -> list[Hit]:
    turns = [_hit(i, "episode", f"Turn {i} says twelve plain words about the boat and the dock.",
                  1.0 - i / 100) for i in range(1, 31)]  # fmt: skip
    notes = [_hit(100 + i, "fact", f"A weak claim number {i} repeated about the boat and dock.",
                  2.0 - i / 100) for i in range(1, 41)]  # fmt: skip
    return sorted([*turns, *notes], key=lambda h: -h.score)


def _turns(hits: list[Hit]) -> list[int]:
    return sorted(h.node.id for h in hits if h.node.kind == "episode")


def test_derived_memories_never_push_a_turn_out() -> None:
    ranked = _ranked()
    alone = pack([h for h in ranked if h.node.kind == "episode"], 150, CAPS)
    both = pack(ranked, 150, CAPS, derived=60)
    assert _turns(both.included) == _turns(alone.included) != []
    facts = [h for h in both.included if h.node.kind == "fact"]
    assert facts and sum(len(f.node.text.split()) + 3 for f in facts) <= 60 + 3 * len(facts)


def test_without_words_of_their_own_no_fact_is_packed() -> None:
    packed = pack(_ranked(), 150, CAPS, derived=0)
    assert all(h.node.kind == "episode" for h in packed.included)
