"""Consolidation in a small context window: units shrink until their prompts fit, a reply cut
at its token limit is asked again about less, and what can never fit is given up, counted,
without failing the run."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from memcli.memory import Memory
from tests.consolidate_helpers import config
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer, count_tokens

SMALL = 1600  # tokens: the facts prompt's instructions alone take most of it


def _memory(tmp_path: Path, server: FakeModelServer, **llm: Any) -> Memory:
    cfg = config(tmp_path, server)
    return Memory(dataclasses.replace(cfg, llm=dataclasses.replace(cfg.llm, **llm)))


def _facts(mem: Memory) -> set[str]:
    return {n.text for n in mem.store.iter_nodes("default", "fact")}


def _prompt_tokens(body: dict[str, Any]) -> int:
    return sum(count_tokens(str(m.get("content") or "")) for m in body["messages"])


def test_every_prompt_fits_a_small_window(chat_store: Path, fake_server: FakeModelServer) -> None:
    fake_server.responder = ScriptedLLM()
    mem = _memory(chat_store, fake_server, context_length=SMALL)
    report = mem.consolidate(flush=True)
    assert all(s.status == "done" for s in report.stages) and report.totals()["failures"] == 0
    bodies = [r.body for r in fake_server.requests_to("/api/chat")]
    assert bodies and fake_server.cut_prompts == 0
    for body in bodies:  # the window holds the prompt and the reply's room
        assert body["options"]["num_ctx"] == SMALL
        assert _prompt_tokens(body) + body["options"]["num_predict"] <= SMALL
    # Chunks and their context are sized to the window: no facts prompt had to be split.
    assert "prompt_too_long" not in report.stage("facts").extra
    assert report.stage("facts").nodes > 0


def test_cut_replies_are_asked_again_about_less(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    llm = ScriptedLLM()
    llm.invent_ids = False  # the one fact a 200-token reply is read for is a real one
    fake_server.responder = llm
    mem = _memory(chat_store, fake_server, max_tokens=200)
    report = mem.consolidate(flush=True, stages=["segment", "gate", "facts"])
    facts = report.stage("facts")
    assert facts.extra["json_cut"] > 0 and facts.failures == 0 and facts.pending == 0
    cut = [r.body for r in fake_server.requests_to("/api/chat")]
    assert all(b["options"]["num_predict"] == 200 for b in cut)
    assert _facts(mem)  # the halves' replies fit: their facts are stored


def test_what_never_fits_is_given_up_and_counted(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = ScriptedLLM()
    mem = _memory(chat_store, fake_server, max_tokens=12)  # no facts reply is that short
    report = mem.consolidate(flush=True, stages=["segment", "gate", "facts"])
    facts = report.stage("facts")
    assert facts.failures == 0 and facts.pending == 0 and facts.extra["too_long"] > 0
    assert facts.nodes == 0 and not _facts(mem)  # nothing of a cut reply is stored
    assert report.totals()["failures"] == 0
