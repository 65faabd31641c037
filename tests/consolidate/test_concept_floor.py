"""Concepts: the keyword rule's always stand, and the fact extractor's are added to them. A
model whose fact replies never validate (a tiny model's, measured) cannot leave a memory
without the concepts it would have had without a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcli.memory import Memory
from tests.consolidate_helpers import opened
from tests.fakemodel import consolidation_reply, read
from tests.fakeserver import FakeModelServer


def _labels(mem: Memory) -> set[str]:
    return {c.text for c in mem.store.iter_nodes(mem.space, "concept")}


def _plain_copy(chat_store: Path, tmp_path: Path, server: FakeModelServer) -> Memory:
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    (plain_dir / "memory.db").write_bytes((chat_store / "memory.db").read_bytes())
    plain = opened(plain_dir, server)
    plain.consolidate(flush=True, no_llm=True)
    return plain


def test_a_model_whose_facts_fail_keeps_the_keyword_concepts(
    chat_store: Path, fake_server: FakeModelServer, tmp_path: Path
) -> None:
    def invalid(body: dict[str, Any]) -> str:
        if read(body).task == "extract":  # no list of facts: invalid, however often re-asked
            return json.dumps({"facts": "none today"})
        return consolidation_reply(body)

    fake_server.responder = invalid
    plain = _plain_copy(chat_store, tmp_path, fake_server)
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    assert report.stage("facts").failures > 0 and report.stage("facts").nodes == 0
    assert _labels(plain) and _labels(plain) <= _labels(mem)
    segments = [s.id for s in mem.store.iter_nodes(mem.space, "segment")]
    assert mem.store.edges_of(segments, ["HAS_CONCEPT"])


def test_the_models_concepts_tag_the_turns_and_their_segments(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = consolidation_reply
    mem = opened(chat_store, fake_server)
    mem.consolidate(flush=True)
    facts = [f.id for f in mem.store.iter_nodes(mem.space, "fact")]
    named = sorted({e.dst for e in mem.store.edges_of(facts, ["ABOUT_CONCEPT"])})
    assert named  # the concepts the fake model gave its facts
    for concept in named:
        tagged = [e.src for e in mem.store.edges_of([concept], ["HAS_CONCEPT"])]
        assert {"episode", "segment"} <= set(mem.store.kinds_of(tagged).values())
