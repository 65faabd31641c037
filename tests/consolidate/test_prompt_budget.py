"""A model budget per turn: a facts chunk is sized to the window and its context (older turns,
stored facts, concepts) trimmed to what the window leaves, so each turn is asked about once;
a reply is asked for no more facts, entities or triplets than its tokens can carry."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path
from typing import Any

from memcli.memory import Memory
from tests.consolidate_helpers import config
from tests.fakemodel import ScriptedLLM, read
from tests.fakeserver import FakeModelServer, count_tokens

_ID = re.compile(r"^\[(ep\d+)\]", re.M)


def _memory(tmp_path: Path, server: FakeModelServer, **llm: Any) -> Memory:
    cfg = config(tmp_path, server, similar_context_k=30)  # more context than fits
    return Memory(dataclasses.replace(cfg, llm=dataclasses.replace(cfg.llm, **llm)))


def _asked(server: FakeModelServer, task: str) -> list[tuple[dict[str, Any], dict[str, str]]]:
    out = []
    for request in server.requests_to("/api/chat"):
        seen = read(request.body)
        if seen.task == task and not seen.retry:
            out.append((request.body, seen.values))
    return out


def _context_lines(values: dict[str, str]) -> int:
    return len(_ID.findall(values["older_turns"])) + values["known_facts"].count("\n- ")


def test_each_new_turn_is_asked_once_and_the_context_gives_way(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    wide = chat_store / "wide"
    wide.mkdir()
    (wide / "memory.db").write_bytes((chat_store / "memory.db").read_bytes())
    fake_server.responder = ScriptedLLM()
    # Replies of one fact per turn (the scripted model's) are never cut at 1000 tokens.
    small = _memory(chat_store, fake_server, context_length=2400, max_tokens=1000)
    report = small.consolidate(flush=True)
    facts = report.stage("facts")
    assert facts.failures == 0 and facts.pending == 0
    assert "prompt_too_long" not in facts.extra and "json_cut" not in facts.extra
    asked = _asked(fake_server, "facts")
    turns = Counter(t for _, values in asked for t in _ID.findall(values["new_turns"]))
    assert len(asked) == facts.items > 1 and turns and max(turns.values()) == 1
    for body, _ in asked:  # the window holds each prompt and its reply's room
        sent = sum(count_tokens(str(m.get("content") or "")) for m in body["messages"])
        assert sent + body["options"]["num_predict"] <= 2400
    # A wider window carries the same turns with more of their context.
    before = len(fake_server.requests)
    fake_server.responder = ScriptedLLM()
    _memory(wide, fake_server, context_length=8192, max_tokens=1000).consolidate(flush=True)
    roomy = _asked(fake_server, "facts")[len(asked) :]
    assert before and roomy
    assert sum(_context_lines(v) for _, v in roomy) > sum(_context_lines(v) for _, v in asked)


def test_replies_are_asked_for_what_their_tokens_carry(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = ScriptedLLM()
    mem = _memory(chat_store, fake_server, max_tokens=250)
    mem.consolidate(flush=True, stages=["segment", "gate", "facts", "entities"])
    facts, entities = _asked(fake_server, "facts"), _asked(fake_server, "entities")
    assert facts and entities
    for body, values in facts:  # (250 - 10) // 75 facts, never more than the chunk's turns
        assert body["options"]["num_predict"] == 250
        turns = len(_ID.findall(values["new_turns"]))
        assert values["max_facts"] == str(min(3, turns))
    assert {values["max_items"] for _, values in entities} == {"3"}  # (250 - 10) // 80
