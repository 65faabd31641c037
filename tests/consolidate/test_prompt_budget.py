"""A model budget per turn: one request per group of kept turns carries facts, entities and
triplets together, asked by the facts stage and read from the cache by the entities stage;
a reply is asked (and its schema capped) for no more items than its tokens can carry;
short segments keep their extractive summary; the link judge sees only close segments."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path
from typing import Any

from memcli.memory import Memory
from tests.consolidate_helpers import config
from tests.fakemodel import ScriptedLLM, read, schema_of
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


def test_each_kept_turn_is_asked_once_for_facts_and_entities_together(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = ScriptedLLM()
    # Replies of one fact per turn (the scripted model's) are never cut at 1000 tokens.
    small = _memory(chat_store, fake_server, context_length=2400, max_tokens=1000)
    report = small.consolidate(flush=True)
    facts, entities = report.stage("facts"), report.stage("entities")
    assert facts.failures == 0 and facts.pending == 0
    assert "prompt_too_long" not in facts.extra and "json_cut" not in facts.extra
    asked = _asked(fake_server, "extract")
    turns = Counter(t for _, values in asked for t in _ID.findall(values["turns"]))
    assert len(asked) == facts.items > 1 and turns and max(turns.values()) == 1
    # The entities stage sends the same requests: all answered from the reply cache.
    assert entities.llm_calls == 0 and entities.cache_hits == len(asked)
    assert entities.extra["triplets"] > 0
    for body, _ in asked:  # the window holds each prompt and its reply's room
        sent = sum(count_tokens(str(m.get("content") or "")) for m in body["messages"])
        assert sent + body["options"]["num_predict"] <= 2400


def test_replies_are_asked_for_what_their_tokens_carry(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = ScriptedLLM()
    mem = _memory(chat_store, fake_server, max_tokens=250)
    mem.consolidate(flush=True, stages=["segment", "gate", "facts", "entities"])
    asked = _asked(fake_server, "extract")
    assert asked
    # 240 tokens: half for facts (55 each), 0.3 for entities (45), 0.2 for triplets (40)
    for body, values in asked:
        assert body["options"]["num_predict"] == 250
        turns = len(_ID.findall(values["turns"]))
        wanted = {"facts": min(2, turns), "entities": 1, "triplets": 1}
        assert {k: values[f"max_{k}"] for k in wanted} == {k: str(v) for k, v in wanted.items()}
        schema = schema_of(body) or {}
        assert {k: schema["properties"][k]["maxItems"] for k in wanted} == wanted
        assert sorted(schema["required"]) == ["entities", "facts", "triplets"]


def test_short_segments_keep_their_extractive_summary_unasked(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = ScriptedLLM()
    cfg = config(chat_store, fake_server, summary_llm_min_words=10_000)
    report = Memory(cfg).consolidate(flush=True, stages=["segment", "summarize"])
    summaries = report.stage("summarize")
    segments = report.stage("segment").nodes
    assert segments and summaries.extra["short"] == segments and summaries.llm_calls == 0
    assert not _asked(fake_server, "summarize")


def test_the_link_judge_sees_only_close_segments_and_can_name_only_them(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    near_store = chat_store / "near"
    near_store.mkdir()
    (near_store / "memory.db").write_bytes((chat_store / "memory.db").read_bytes())
    fake_server.responder = ScriptedLLM()
    far = Memory(config(chat_store, fake_server, link_min_similarity=1.0))
    link = far.consolidate(flush=True, stages=["segment", "link"]).stage("link")
    assert link.items > 1 and link.extra["no_candidate"] == link.items
    assert link.llm_calls == 0 and not _asked(fake_server, "relate")
    near = Memory(config(near_store, fake_server, link_min_similarity=0.0))
    link = near.consolidate(flush=True, stages=["segment", "link"]).stage("link")
    asked = _asked(fake_server, "relate")
    assert asked and link.extra["no_candidate"] == 1  # the first segment has nothing older
    for body, values in asked:  # the reply's ids are held to the candidates shown
        shown = re.findall(r"^\[(sg\d+)\]", values["candidates"], re.M)
        links = (schema_of(body) or {})["$defs"]["TopicLink"]["properties"]["id"]
        assert shown and links["enum"] == shown
