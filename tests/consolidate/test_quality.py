"""A weak model's derived memories are checked before they are stored: empty ones, copies
of a turn, claims the cited turns do not ground, near-duplicates are dropped and counted
(memcli.consolidate.quality)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcli.consolidate.quality import Sieve, verbatim
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


def test_a_short_quote_is_not_a_copy() -> None:
    assert not verbatim("Ben said see you soon to Ana", "Ben: see you soon")
    assert verbatim("see you soon at the lathe", "Ben said see you soon at the lathe today")


def _weak(body: dict[str, Any]) -> str:
    """Facts a weak model writes for the first turn of each chunk; the rest valid."""
    request = read(body)
    if request.task != "extract":
        return consolidation_reply(body)
    node, _, speaker, text, _ = _TURN.findall(request.values["turns"])[0]
    claims = [
        "...",  # the prompt's example, copied
        f"{speaker}: {text}",  # the turn, copied
        "The moon is made of green cheese.",  # nothing the turn says
        f"{speaker} spoke in turn {node} about {text.split()[-1]}",  # kept
        f"{speaker} spoke in turn {node} about {text.split()[-1]} too",  # near twin
    ]
    facts = [{"text": c, "belief": 0.9, "sources": [node], "concepts": []} for c in claims]
    return json.dumps({"facts": facts, "concepts": []})


def test_consolidation_stores_only_the_facts_that_pass(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = _weak
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    facts = report.stage("facts")
    assert facts.items > 0 and facts.failures == 0
    # A reply is asked for no more facts than its turns: the claims past them are not read.
    asked = [read(r.body) for r in fake_server.requests_to("/api/chat")]
    sizes = [len(_TURN.findall(a.values["turns"])) for a in asked if a.task == "extract"]
    assert len(sizes) == facts.items and max(sizes) >= 5
    reasons = ("dropped_empty", "dropped_verbatim", "dropped_ungrounded", None, "dropped_duplicate")
    for n, reason in enumerate(reasons):
        if reason is not None:
            assert facts.extra[reason] == sum(size > n for size in sizes), reason
    stored = [n.text for n in mem.store.iter_nodes("default", "fact")]
    assert len(stored) == facts.nodes == sum(size > 3 for size in sizes)
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
