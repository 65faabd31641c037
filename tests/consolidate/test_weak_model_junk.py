"""What a weak model writes that must not be stored (issue 37, items 3 and 4), replayed
through the fake model server: entity names that are sentences or that no cited turn says,
triplets about things their turns never mention, keywords and summaries copied from the
prompt's own examples and instructions, and a turn copied behind a preamble."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memcli.consolidate.grounding import Prompted, Said, is_name
from memcli.consolidate.quality import Sieve
from memcli.text import canonical_key
from tests.consolidate_helpers import opened
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer

_TURN = re.compile(r"^\[(ep\d+)\] \(([^)]*)\) (\w+): (.*?)(?:  \{dates: .*\})?$", re.M)
# What the summarize prompt gives as examples of keywords (prompts/summarize.md).
EXAMPLE_KEYWORDS = ["sourdough starter", "chess club", "bicycle repair"]


class JunkLLM(ScriptedLLM):
    """ScriptedLLM, but its entities and summaries carry what SmolLM2 was seen to write."""

    def entities(self, values: dict[str, str]) -> dict[str, Any]:
        reply = super().entities(values)
        ep, _, speaker, text = _TURN.findall(values["turns"])[0]
        sentence = "I am a writer of books and I will write about it for the conference."
        reply["entities"] += [
            {"name": sentence, "type": "person", "description": "", "turns": [ep]},
            {"name": "Dr. Ana Ruiz", "type": "person", "description": "", "turns": [ep]},
            {"name": text, "type": "other", "description": "", "turns": [ep]},  # a whole turn
        ]
        reply["triplets"] += [
            {"subject": speaker, "predicate": "lives in", "object": "Porto", "turns": [ep]},
            {"subject": sentence, "predicate": "is", "object": "writer", "turns": [ep]},
        ]
        return reply

    def summarize(self, values: dict[str, str]) -> dict[str, Any]:
        reply = super().summarize(values)
        _, _, _, text = _TURN.findall(values["turns"])[-1]
        if len(_TURN.findall(values["turns"])) % 2:  # half the segments: a copied turn
            reply["summary"] = f"The summary and keywords of the turns are: - {text}"
        reply["keywords"] = [*EXAMPLE_KEYWORDS, *reply["keywords"], "submarine"]
        return reply


def test_a_weak_models_names_triplets_keywords_and_summaries_are_not_stored(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = JunkLLM()
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    store, space = mem.store, mem.space
    entities = list(store.iter_nodes(space, "entity"))
    for entity in entities:  # every entity's name is said where it is mentioned
        sources = [e.src for e in store.edges_of([entity.id], ["MENTIONS"]) if e.dst == entity.id]
        texts = [f"{n.speaker}: {n.text}" for n in store.nodes_by_ids(sources).values()]
        assert texts and Said(texts).holds(entity.text), entity.text
    names = {canonical_key(e.text) for e in entities}
    assert "dr ana ruiz" not in names and not any(len(n.split()) > 8 for n in names)
    assert "porto" not in names  # only the invented triplet named it
    relations = store.edges_of([e.id for e in entities], ["RELATION"])
    said = [p["predicate"] for e in relations for p in e.props["predicates"]]
    assert said and "lives in" not in said and "is" not in said  # the good ones stay
    entity_stage = report.stage("entities")
    assert entity_stage.extra["ungrounded"] >= 5 * entity_stage.items
    for segment in store.iter_nodes(space, "segment"):
        keywords = [k.lower() for k in segment.props.get("keywords", [])]
        assert not set(keywords) & {*EXAMPLE_KEYWORDS, "submarine"}, keywords
        assert "summary and keywords" not in segment.text.lower()
    summarize = report.stage("summarize").extra
    assert summarize["dropped_example"] > 0 and summarize["keywords_example"] > 0
    assert summarize["keywords_ungrounded"] > 0
    assert any(s.props.get("summary") == "llm" for s in store.iter_nodes(space, "segment"))


def test_names_are_compared_normalised_not_byte_for_byte() -> None:
    said = Said(["[ep3] (2023-05-07) ana: We had lunch at CASA DO LARGO, by São Bento."])
    assert said.holds("Casa do Largo") and said.holds("Sao Bento") and said.holds("Ana's")
    assert said.holds("the largo")  # its content words, in any order
    assert not said.holds("Lisbon") and not said.holds("Casa Lisboa")
    assert not is_name("I am a writer of books and I will write about it.")
    assert is_name("The Old Man and the Sea")


def test_the_prompts_own_words_are_no_keyword_and_no_summary() -> None:
    messages = [
        {
            "role": "user",
            "content": 'Keywords, for example "sourdough starter".\n<memory_data>\n'
            "[ep1] (2023-05-07) Ana: I bake with my sourdough.\n</memory_data>\n"
            "Reply with JSON only: the summary and keywords of the turns above.",
        }
    ]
    prompted = Prompted(messages, ["[ep1] (2023-05-07) Ana: I bake with my sourdough."])
    assert prompted.why_not_keyword("Sourdough Starter") == "keywords_example"
    assert prompted.why_not_keyword("chess club") == "keywords_ungrounded"
    assert prompted.why_not_keyword("sourdough") is None
    assert prompted.copies("The summary and keywords of the turns are: -")
    assert not prompted.copies("Ana bakes bread with her sourdough.")


def test_a_turn_copied_behind_a_preamble_is_verbatim() -> None:
    line = "[ep4] (2023-05-07 10:00) Ana: I finally booked the train tickets to Lisbon."
    copied = "Here is the summary: I finally booked the train tickets to Lisbon."
    assert Sieve().reason(copied, [line]) == "dropped_verbatim"
    assert Sieve().reason("Ana booked train tickets for her trip to Lisbon.", [line]) is None
