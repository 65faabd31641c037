"""A weak model's derived memories are checked before they are stored: empty ones, copies
of a turn, claims the cited turns do not ground, near-duplicates are dropped and counted
(memcli.consolidate.quality)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memcli.consolidate.quality import Sieve, personal, verbatim
from tests.consolidate_helpers import long_chat, opened
from tests.fakemodel import _TURN, consolidation_reply, read
from tests.fakeserver import FakeModelServer

TURN = "Ana: Yesterday I finally went to my first woodturning class at the community workshop."


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("...", "dropped_empty"),
        ("N/A", "dropped_empty"),
        ("The fact.", "dropped_empty"),
        ("I finally went to my first woodturning class", "dropped_verbatim"),
        (f"[ep1] (2023-05-08) {TURN}", "dropped_verbatim"),
        ("The capital of Portugal is Lisbon.", "dropped_ungrounded"),
        ("Ana took her first woodturning class at a community workshop.", None),
        ("Bob attended a woodworking course.", "dropped_ungrounded"),
        # the instructions summarised, one word of the turn in five
        (
            "Your task is to summarize the segment about woodturning in sentences.",
            "dropped_ungrounded",
        ),
    ],
)
def test_a_memory_is_kept_or_dropped_for_its_reason(text: str, reason: str | None) -> None:
    assert Sieve().reason(text, [TURN]) == reason


def test_near_duplicates_of_kept_or_stored_memories_are_dropped() -> None:
    sieve = Sieve(known=["Ana took her first woodturning class at a community workshop."])
    first = "Ana took her first woodturning class at the community workshop."
    assert sieve.reason(first, [TURN]) == "dropped_duplicate"
    other = Sieve()
    assert other.reason("Ana went to a woodturning class at the workshop.", [TURN]) is None
    assert other.reason("Ana went to the woodturning class at the workshop.", [TURN]) == (
        "dropped_duplicate"
    )
    # the same words again are not dropped: the store merges an exact twin's provenance
    assert other.reason("Ana went to a woodturning class at the workshop.", [TURN]) is None


def test_a_claim_in_the_first_or_second_person_or_a_bare_date_is_no_fact() -> None:
    assert personal("What a great idea! I'm excited to help you") and personal("my rocks")
    assert personal("How long have you been married?") and personal("We met in May")
    assert not personal("Ana moved to the US in 2020") and not personal("Ben fixed the I/O board")
    assert Sieve().reason("2023-05-24", []) == "dropped_empty"
    assert Sieve().reason("Ana ran 5 km on 2023-05-24", []) is None


def test_a_short_quote_is_not_a_copy() -> None:
    assert not verbatim("Ben said see you soon to Ana", "Ben: see you soon")
    assert verbatim("see you soon at the lathe", "Ben said see you soon at the lathe today")


def _claims(node: str, speaker: str, text: str) -> list[tuple[str, str]]:
    """What a weak model claims about a turn, and why each is dropped ("kept" if not)."""
    last = text.split()[-1]
    return [
        ("...", "dropped_no_claim"),  # the prompt's example, copied
        (speaker, "dropped_no_claim"),  # a name, no claim about it
        ("1 2 3", "dropped_empty"),  # no word of letters
        (f"{speaker}: {text}", "dropped_verbatim"),  # the turn, copied
        ("The moon is made of green cheese.", "dropped_ungrounded"),  # nothing the turn says
        (f"{speaker} spoke in turn {node} about {last}", "kept"),
        (f"{speaker} spoke in turn {node} about {last} too", "dropped_duplicate"),  # near twin
        (f"I spoke in turn {node} about {last} again", "dropped_personal"),  # whose "I"?
    ]


def _weak(body: dict[str, Any]) -> str:
    """Facts a weak model writes for the first turn of each chunk; the rest valid."""
    request = read(body)
    if request.task != "extract":
        return consolidation_reply(body)
    node, _, speaker, text, _ = _TURN.findall(request.values["turns"])[0]
    facts = [
        {"text": c, "belief": 0.9, "sources": [node], "concepts": []}
        for c, _ in _claims(node, speaker, text)
    ]
    return json.dumps({"facts": facts})


def test_consolidation_stores_only_the_facts_that_pass(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = _weak
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    facts = report.stage("facts")
    assert facts.items > 0 and facts.failures == 0
    # A reply is asked for no more facts than its turns: the claims past them are not read;
    # a claim in the first or second person is dropped before the other checks.
    expected: Counter[str] = Counter()
    for request in (read(r.body) for r in fake_server.requests_to("/api/chat")):
        if request.task == "extract":
            turns = _TURN.findall(request.values["turns"])
            node, _, speaker, text, _ = turns[0]
            for claim, why in _claims(node, speaker, text)[: len(turns)]:
                expected["dropped_personal" if personal(claim) else why] += 1
    assert {"dropped_no_claim", "dropped_verbatim", "dropped_ungrounded", "kept"} <= set(expected)
    assert {k: facts.extra[k] for k in expected if k != "kept"} == {
        k: n for k, n in expected.items() if k != "kept"
    }
    stored = [n.text for n in mem.store.iter_nodes("default", "fact")]
    assert len(stored) == facts.nodes == expected["kept"]
    assert all(" spoke in turn " in text and not text.endswith(" too") for text in stored)


def _ungrounded_summaries(body: dict[str, Any]) -> str:
    """Summaries about nothing the turns say; every other task answered well."""
    if read(body).task != "summarize":
        return consolidation_reply(body)
    return json.dumps({"summary": "The moon is made of green cheese.", "keywords": ["moon"]})


def test_a_dropped_summary_keeps_the_extractive_one_and_is_not_asked_again(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = _ungrounded_summaries
    mem = opened(chat_store, fake_server)
    first = mem.consolidate(flush=True).stage("summarize")
    segments = list(mem.store.iter_nodes("default", "segment"))
    assert segments and first.extra["dropped_ungrounded"] == len(segments)
    assert all(s.props["summary"] == "extractive" for s in segments)
    assert mem.store.unprocessed("default", "summarize", kind="segment") == []
    asked = len(fake_server.requests)
    again = mem.consolidate(flush=True).stage("summarize")
    assert again.extra.get("dropped_ungrounded", 0) == 0
    later = [r.body for r in fake_server.requests[asked:] if r.body.get("messages")]
    assert not [b for b in later if read(b).task == "summarize"]


def test_segments_left_without_a_summary_are_asked_again_beside_new_ones(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    """Summaries the segment stage asks for new segments do not use up the summarize
    stage's turn at the segments an earlier run left pending."""
    invalid = {"summary": "", "keywords": []}  # fails the schema on every ask

    def summaries(valid: bool) -> Any:
        def reply(body: dict[str, Any]) -> str:
            if read(body).task != "summarize":
                return consolidation_reply(body)
            return consolidation_reply(body) if valid else json.dumps(invalid)

        return reply

    mem = opened(tmp_path, fake_server)
    mem.ingest([str(long_chat(tmp_path / "early.jsonl", 1))])
    fake_server.responder = summaries(valid=False)
    mem.consolidate(flush=True)
    left = mem.store.unprocessed("default", "summarize", kind="segment")
    assert left  # the reply never validated: pending for a later run
    mem.ingest([str(long_chat(tmp_path / "later.jsonl", 4))])  # more new segments than left
    fake_server.responder = summaries(valid=True)
    mem.consolidate(flush=True)
    assert mem.store.unprocessed("default", "summarize", kind="segment") == []
    kinds = {s.id: s.props["summary"] for s in mem.store.iter_nodes("default", "segment")}
    assert all(kinds[i] == "llm" for i in left)
