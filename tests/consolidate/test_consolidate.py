"""`consolidate` through the library API on real stores, with the fake model server.

No-LLM stages (similarity segmentation, extractive summaries, keyword concepts) and the
LLM stages driven by a scripted model: provenance, invented ids, repairs, re-asks, the
cache, buffers, limits and dry runs.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memcli.errors import ProviderUnreachable, UsageError
from memcli.memory import Memory
from tests.consolidate_helpers import canonical_label, config, graph_counts, ingested, opened
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer, refused_url
from tests.stores import LOCOMO_DEV, Built, StoreCache

NO_LLM = ("link", "facts", "reflect")


def _part_of(mem: Memory) -> dict[int, int]:
    """episode id -> segment id, asserting one segment per episode."""
    episodes = [n.id for n in mem.store.iter_nodes(mem.space, "episode")]
    edges = mem.store.edges_of(episodes, ["PART_OF"])
    owners = Counter(e.src for e in edges)
    assert all(n == 1 for n in owners.values())
    return {e.src: e.dst for e in edges}


def _scripted(server: FakeModelServer) -> ScriptedLLM:
    llm = ScriptedLLM()
    server.responder = llm
    return llm


# -- without an LLM ----------------------------------------------------------------------------


def test_no_llm_leaves_the_turns_full_text_scores_as_they_were(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    # Segments repeat their turns' sentences; in their own full-text table they leave the
    # statistics of the turns' BM25 alone, so a store ranks its turns after `consolidate`
    # exactly as before it (organisers are still found, in their own table).
    mem = ingested(tmp_path, fake_server, llm=False)
    words = sorted({w for n in mem.store.iter_nodes(mem.space, "episode")
                    for w in re.findall(r"[a-z]{4,}", n.text.lower())})[:40]  # fmt: skip
    before = {w: mem.store.text_search_columns(mem.space, w, 50, ["episode"]) for w in words}
    mem.consolidate(flush=True, no_llm=True)
    after = {w: mem.store.text_search_columns(mem.space, w, 50, ["episode"]) for w in words}
    assert after == before
    segments = [n.id for n in mem.store.iter_nodes(mem.space, "segment")]
    assert segments and any(
        i in segments for w in words for i, _ in mem.store.text_search(mem.space, w, 50)
    )
    mem.close()


def test_no_llm_builds_segments_and_concepts(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    built = stores.copy("chat-no-llm", tmp_path / "memory.db")  # consolidate(no_llm=True)
    mem = opened(tmp_path, fake_server)
    report = built.info["report"]
    stages = report["stages"]
    assert [stages[s]["status"] for s in ("segment", "summarize", "concepts")] == ["done"] * 3
    for name in NO_LLM:
        assert stages[name]["status"] == "skipped" and "needs an LLM" in stages[name]["reason"]
    assert report["totals"]["llm_calls"] == 0 and built.info["chat_requests"] == 0

    owner = _part_of(mem)
    episodes = {n.id: n for n in mem.store.iter_nodes(mem.space, "episode")}
    assert set(owner) == set(episodes)  # every turn is in exactly one segment
    segments = list(mem.store.iter_nodes(mem.space, "segment"))
    assert 3 <= len(segments) < len(episodes)
    for seg in segments:
        members = sorted(
            (episodes[e] for e, s in owner.items() if s == seg.id), key=lambda n: n.seq
        )
        assert {m.session for m in members} == {seg.session}
        assert seg.timestamp == members[0].timestamp and seg.seq == members[0].seq
        assert seg.props["episodes"] == len(members) and seg.props["summary"] == "extractive"
        assert seg.text and isinstance(seg.props["keywords"], list)

    concepts = list(mem.store.iter_nodes(mem.space, "concept"))
    labels = [c.text for c in concepts]
    assert labels and len({canonical_label(lb) for lb in labels}) == len(labels)
    assert {"woodturning", "allotment"} <= {w for lb in labels for w in lb.split("_")}
    has = mem.store.edges_of([c.id for c in concepts], ["HAS_CONCEPT"])
    kinds = {mem.store.get_node(e.src).kind for e in has}
    assert kinds == {"episode", "segment"}
    assert len(mem.store.get_vectors([s.id for s in segments] + [c.id for c in concepts])) == len(
        segments
    ) + len(concepts)
    assert mem.stats()["consolidation"]["pending"]["segment"] == 0


def test_second_run_changes_nothing(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    stores.copy("chat-no-llm", tmp_path / "memory.db")  # consolidate(no_llm=True) ran once
    mem = opened(tmp_path, fake_server)
    before = graph_counts(mem)
    again = mem.consolidate(flush=True, no_llm=True)
    assert graph_counts(mem) == before
    assert again.totals()["items"] == 0 and again.totals()["nodes"] == 0


def test_no_embeddings_fall_back_to_word_statistics(tmp_path: Path) -> None:
    mem = ingested(tmp_path, None, llm=False, embeddings=False)
    report = mem.consolidate(flush=True)
    assert report.stage("facts").status == "skipped"  # llm.provider none, no flag needed
    nodes, edges = graph_counts(mem)
    assert nodes["segment"] >= 3 and nodes["concept"] >= 2
    assert edges["PART_OF"] == nodes["episode"]
    assert not mem.store.has_vectors()


def test_open_session_waits_for_flush(chat_store: Path, fake_server: FakeModelServer) -> None:
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(no_llm=True)
    last_session = 8  # s3 is the newest session: nothing after it has started yet
    assert report.stage("segment").pending == last_session
    assert "--flush" in report.stage("segment").reason
    assert len(_part_of(mem)) == graph_counts(mem)[0]["episode"] - last_session
    mem.consolidate(no_llm=True, flush=True)
    assert len(_part_of(mem)) == graph_counts(mem)[0]["episode"]


def test_a_full_buffer_is_consolidated_without_flush(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    mem = opened(chat_store, fake_server, buffer_tokens=60)
    report = mem.consolidate(no_llm=True, stages=["segment"])
    s3 = {n.id for n in mem.store.iter_nodes(mem.space, "episode") if n.session == "s3"}
    done = s3 & set(_part_of(mem))
    assert done and len(done) < len(s3)  # windows past the limit closed; the tail waits
    assert 0 < report.stage("segment").pending < len(s3)


def test_limit_and_stage_selection(chat_store: Path, fake_server: FakeModelServer) -> None:
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True, no_llm=True, limit=1, stages=["segment,concepts"])
    assert report.stage("segment").items == 1 and report.stage("segment").pending > 0
    assert report.stage("segment").reason == "stopped by --limit"
    assert report.stage("summarize").reason == "not selected (--stage)"
    assert report.stage("concepts").items == 1
    with pytest.raises(UsageError, match="unknown stage 'segments'"):
        mem.consolidate(stages=["segments"])


def test_dry_run_writes_nothing(chat_store: Path, fake_server: FakeModelServer) -> None:
    mem = opened(chat_store, fake_server)
    before = graph_counts(mem)
    report = mem.consolidate(dry_run=True)
    assert graph_counts(mem) == before and mem.store.last_runs(mem.space) == []
    assert report.dry_run and report.stage("segment").pending == before[0]["episode"]
    assert [(s["session"], s["closes"]) for s in report.sessions] == [
        ("s1", True),
        ("s2", True),
        ("s3", False),
    ]
    assert not fake_server.requests_to("/api/chat")


# -- with a scripted LLM ------------------------------------------------------------------------


def test_llm_pipeline_end_to_end(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    built = stores.copy("chat-scripted", tmp_path / "memory.db")  # consolidate(flush=True)
    mem = opened(tmp_path, fake_server)
    stages = built.info["report"]["stages"]
    assert all(stages[s]["status"] == "done" for s in stages), stages
    assert built.info["report"]["totals"]["failures"] == 0 and built.info["reasks"] == {}
    assert stages["facts"]["dropped"] > 0 and stages["link"]["dropped"] > 0
    assert stages["segment"]["dropped"] > 0  # the out-of-range turn number
    assert stages["facts"]["unsupported_facts"] >= 1
    store, space = mem.store, mem.space

    episodes = {n.id: n for n in store.iter_nodes(space, "episode")}
    facts = list(store.iter_nodes(space, "fact"))
    assert facts and all(f.status == "active" and f.belief == 0.9 for f in facts)
    derived = store.edges_of([f.id for f in facts], ["DERIVED_FROM"])
    assert {e.dst for e in derived} <= set(episodes)  # invented ep99999 never stored
    assert {f.id for f in facts} == {e.src for e in derived}
    assert all("invented" not in f.text for f in facts)
    dated = [f for f in facts if f.props.get("valid_from")]
    assert dated and dated[0].props["valid_from"] == "2023-05-07"  # "yesterday" on 8 May

    concepts = [c.text for c in store.iter_nodes(space, "concept")]
    assert "woodturning_plan" in concepts and "woodturning_plans" not in concepts
    about = store.edges_of([f.id for f in facts], ["ABOUT_CONCEPT"])
    assert len(about) == len(facts)

    segments = list(store.iter_nodes(space, "segment"))
    assert all(s.props["summary"] == "llm" for s in segments)
    assert len(segments) == 6  # the scripted boundaries: one "By the way" per session
    related = store.edges_of([s.id for s in segments], ["RELATED"])
    assert related and all(e.weight >= 0.6 and e.props["label"] == "semantic" for e in related)
    assert all(e.src > e.dst for e in related)  # new -> older

    reflections = list(store.iter_nodes(space, "reflection"))
    assert reflections
    support = store.edges_of([r.id for r in reflections], ["DERIVED_FROM_FACT"])
    assert {e.dst for e in support} <= {f.id for f in facts}

    answer = mem.ask("woodturning class varnish", context_only=True, k=40)
    fact_hits = [h for h in answer.hits if h.node.kind == "fact"]
    assert fact_hits and all(h.sources for h in fact_hits)
    assert {r for h in fact_hits for r in h.sources} <= {e.ref for e in episodes.values()}


def test_rerun_answers_from_cache_and_changes_nothing(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    stores.copy("chat-scripted", tmp_path / "memory.db")  # consolidated by the scripted model
    llm = _scripted(fake_server)
    mem = opened(tmp_path, fake_server)
    before = graph_counts(mem)
    again = mem.consolidate(flush=True)
    assert again.totals()["llm_calls"] == 0 and llm.calls.total() == 0
    assert graph_counts(mem) == before


def test_a_crashed_unit_is_redone_from_the_cache(
    stores: StoreCache, chat_store: Path, fake_server: FakeModelServer
) -> None:
    """Replies obtained before a crash are not paid for again, and the graph comes out the
    same as an uninterrupted run's."""
    llm = _scripted(fake_server)
    mem = opened(chat_store, fake_server)
    broken = dataclasses.replace(mem.cfg.embedding, url=refused_url(), max_retries=0)
    crashing = Memory(dataclasses.replace(mem.cfg, embedding=broken), store=mem.store)
    with pytest.raises(ProviderUnreachable):
        crashing.consolidate(flush=True)  # the model answered, then embedding failed
    assert graph_counts(mem)[0] == {"episode": 28}
    paid = llm.calls.total()
    assert paid > 0
    resumed = mem.consolidate(flush=True)
    entities = resumed.stage("entities")  # the facts stage's replies, read from the cache
    assert entities.llm_calls == 0 and entities.cache_hits > 0
    assert resumed.totals()["cache_hits"] == paid + entities.cache_hits
    assert llm.calls.total() == paid + resumed.totals()["llm_calls"]
    straight = stores.get("chat-scripted").info["counts"]  # one uninterrupted run
    assert [*graph_counts(mem)] == straight


def test_kill_between_stages_resumes_from_cache(
    stores: StoreCache, chat_store: Path, fake_server: FakeModelServer
) -> None:
    """A run that stopped after some stages (the rest pending) ends like a full run."""
    _scripted(fake_server)
    full = stores.get("chat-scripted").info["counts"]  # one full run
    part = opened(chat_store, fake_server)
    part.consolidate(flush=True, stages=["segment", "summarize", "link"])
    part.consolidate(flush=True)
    assert [*graph_counts(part)] == full


def test_malformed_json_is_repaired_without_asking_again(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    llm = _scripted(fake_server)
    llm.fenced = True
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    assert report.totals()["failures"] == 0 and llm.reasks.total() == 0
    assert graph_counts(mem)[0]["fact"] > 0


def test_schema_violation_is_asked_again(chat_store: Path, fake_server: FakeModelServer) -> None:
    llm = _scripted(fake_server)
    llm.bad_first = {"extract"}
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    chunks = report.stage("facts").items
    assert llm.reasks["extract"] == chunks > 0
    assert report.stage("facts").failures == 0 and graph_counts(mem)[0]["fact"] > 0
    reask = [r for r in fake_server.requests_to("/api/chat") if len(r.body["messages"]) == 3]
    assert "could not be used" in reask[0].body["messages"][2]["content"]


def test_invalid_replies_are_counted_and_left_pending(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    llm = _scripted(fake_server)
    llm.always_bad = {"reflect"}
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    reflect = report.stage("reflect")
    assert reflect.failures == reflect.pending // 20 + (1 if reflect.pending % 20 else 0)
    assert llm.reasks["reflect"] == 2 * reflect.failures  # two re-asks per batch
    assert reflect.status == "done" and graph_counts(mem)[0].get("reflection", 0) == 0
    health = mem.stats()["consolidation"]
    assert health["last_runs"]["reflect"]["failures"] == reflect.failures
    assert health["pending"]["reflect"] == reflect.pending > 0
    assert health["totals"]["failures"] == reflect.failures


def test_server_errors_are_retried(chat_store: Path, fake_server: FakeModelServer) -> None:
    _scripted(fake_server)
    mem = opened(chat_store, fake_server)
    fake_server.fail_next(1, status=503)
    report = mem.consolidate(flush=True)
    assert report.totals()["failures"] == 0
    assert graph_counts(mem)[0]["fact"] > 0


def test_unreachable_model_fails_cleanly(chat_store: Path, fake_server: FakeModelServer) -> None:
    mem = opened(chat_store, fake_server, llm_url=refused_url())
    before = graph_counts(mem)
    with pytest.raises(ProviderUnreachable, match="cannot reach"):
        mem.consolidate(flush=True)
    assert graph_counts(mem) == before  # the first unit needed the model: nothing written
    runs = {r["stage"]: r for r in mem.store.last_runs(mem.space)}
    assert runs["segment"]["status"] == "failed" and "cannot reach" in runs["segment"]["last_error"]
    assert mem.store.try_lock("consolidate") is None  # the lock was released


def test_timeouts_fail_the_stage(chat_store: Path, fake_server: FakeModelServer) -> None:
    mem = opened(chat_store, fake_server)
    llm = dataclasses.replace(mem.cfg.llm, timeout=0.2, max_retries=0)
    slow = Memory(dataclasses.replace(mem.cfg, llm=llm), store=mem.store)
    fake_server.delay = 0.6
    with pytest.raises(ProviderUnreachable, match="no answer within"):
        slow.consolidate(flush=True, stages=["segment"])
    assert slow.store.last_runs(slow.space)[0]["status"] == "failed"


def test_rows_of_a_killed_run_are_marked_interrupted(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    mem = opened(chat_store, fake_server)
    mem.store.run_start(mem.space, "segment")  # what a killed run leaves behind
    mem.consolidate(no_llm=True, stages=["concepts"])
    runs = {r["stage"]: r for r in mem.store.last_runs(mem.space)}
    assert runs["segment"]["status"] == "interrupted"
    assert runs["concepts"]["status"] == "done"


# -- the LoCoMo dev conversations (outside the repository; skipped when absent) -----------------

needs_dev = pytest.mark.skipif(LOCOMO_DEV is None, reason="LoCoMo dev file not available")


def test_no_llm_on_the_dev_file(dev_store: Built, fake_server: FakeModelServer) -> None:
    # dev_store: the dev file ingested, then consolidate(flush=True, no_llm=True)
    mem = opened(dev_store.path.parent, fake_server, llm=False)
    nodes, edges = graph_counts(mem)
    assert nodes["segment"] > 50 and nodes["concept"] > 50
    assert edges["PART_OF"] == nodes["episode"] and edges["HAS_CONCEPT"] > nodes["concept"]
    degree = Counter(
        e.dst
        for e in mem.store.edges_of([c.id for c in mem.store.iter_nodes(mem.space, "concept")])
    )
    share = mem.cfg.consolidation.concept_max_df_share
    assert max(degree.values()) <= 2 * max(10, share * nodes["episode"])  # turns + segments


def _frequent_words(conversation: dict[str, Any], n: int = 8) -> tuple[str, ...]:
    """The conversation's most frequent long words: topics for the scripted model, taken
    from the data itself."""
    turns = [t for k, v in conversation.items() if k.startswith("session_") for t in v or []]
    said = " ".join(t["text"] for t in turns if isinstance(t, dict)).lower()
    return tuple(w for w, _ in Counter(re.findall(r"[a-z]{7,}", said)).most_common(n))


@needs_dev
def test_scripted_llm_over_a_dev_conversation(tmp_path: Path, fake_server: FakeModelServer) -> None:
    llm = _scripted(fake_server)
    assert LOCOMO_DEV is not None
    first = json.loads(LOCOMO_DEV.read_text())[0]
    llm.topics = _frequent_words(first["conversation"])
    conversation = tmp_path / "conv.json"
    conversation.write_text(json.dumps({"conversation": first["conversation"]}))
    mem = Memory(config(tmp_path, fake_server))
    mem.ingest([str(conversation)], fmt="locomo")
    report = mem.consolidate(flush=True)
    assert report.totals()["failures"] == 0
    episodes = {n.id for n in mem.store.iter_nodes(mem.space, "episode")}
    facts = [f.id for f in mem.store.iter_nodes(mem.space, "fact")]
    derived = mem.store.edges_of(facts, ["DERIVED_FROM"])
    assert facts and {e.src for e in derived} == set(facts)  # every fact has provenance
    assert {e.dst for e in derived} <= episodes
    labels = [c.text for c in mem.store.iter_nodes(mem.space, "concept")]
    assert len({canonical_label(lb) for lb in labels}) == len(labels)
    assert not {lb + "s" for lb in labels} & set(labels)  # no plural twin
    before, calls = graph_counts(mem), llm.calls.total()
    again = mem.consolidate(flush=True)
    assert again.totals()["llm_calls"] == 0 and llm.calls.total() == calls
    assert graph_counts(mem) == before


def test_near_duplicate_concepts_are_merged_with_their_edges(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    from memcli.models import Edge

    mem = opened(chat_store, fake_server, concepts_per_segment=0)
    store, space = mem.store, mem.space
    eps = [n.id for n in store.iter_nodes(space, "episode")]
    with store.transaction():
        kept = store.insert_node(space, "concept", "meditation_retreat", key="meditation_retreat")
        typo = store.insert_node(space, "concept", "meditaton_retreat", key="meditaton_retreat")
        other = store.insert_node(space, "concept", "woodturning_glass", key="woodturning_glass")
        store.add_edges(space, [Edge(e, kept, "HAS_CONCEPT") for e in eps[:3]])
        store.add_edges(space, [Edge(e, typo, "HAS_CONCEPT") for e in eps[2:5]])
        store.add_edges(space, [Edge(eps[0], other, "HAS_CONCEPT")])
    report = mem.consolidate(no_llm=True, stages=["concepts"])
    assert report.stage("concepts").extra["merged"] == 1
    assert store.get_node(typo) is None and store.get_node(other) is not None
    assert {e.src for e in store.edges_of([kept], ["HAS_CONCEPT"])} == set(eps[:5])
    assert store.get_node(kept).props["aliases"] == ["meditaton_retreat"]
    again = mem.consolidate(no_llm=True, stages=["concepts"])
    assert again.stage("concepts").extra["merged"] == 0
