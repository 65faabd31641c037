"""Fact supersession on the LLM path: a value that changes twice leaves one current fact and
two superseded ones chained by SUPERSEDES; `ask` packs the current value first and marks the
old ones; `prune --superseded` removes exactly those."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memcli.memory import Memory
from tests.cli_runner import Memcli
from tests.consolidate_helpers import config, config_file
from tests.fakemodel import _TURN, ScriptedLLM
from tests.fakeserver import FakeModelServer
from tests.paths import DATA
from tests.reliability import integrity

MOVES = DATA / "knowledge" / "moves.jsonl"
_LIVES = re.compile(r"\bI live in (\w+)")


class MovingLLM(ScriptedLLM):
    """The scripted model, plus one fact per turn saying where its speaker lives."""

    def facts(self, values: dict[str, str]) -> dict[str, Any]:
        reply = super().facts(values)
        for ep, _, speaker, text, _ in _TURN.findall(values["turns"]):
            city = _LIVES.search(text)
            if city:
                said = {"text": f"{speaker} lives in {city.group(1)}", "belief": 0.9}
                reply["facts"].append({**said, "sources": [ep], "concepts": []})
        return reply


@pytest.fixture
def moved(tmp_path: Path, fake_server: FakeModelServer) -> tuple[Memory, MovingLLM]:
    llm = MovingLLM()
    llm.invent_ids = False  # no invented fact: a reply is read up to as many facts as turns
    fake_server.responder = llm
    mem = Memory(config(tmp_path, fake_server))
    mem.ingest([str(MOVES)])
    report = mem.consolidate(flush=True)
    assert report.totals()["failures"] == 0
    return mem, llm


def _lives(mem: Memory) -> dict[str, Any]:
    return {
        f.text.split()[-1]: f
        for f in mem.store.iter_nodes(mem.space, "fact")
        if f.text.startswith("Ana lives in")
    }


def test_a_value_changed_twice_is_one_current_fact_and_a_chain(
    moved: tuple[Memory, MovingLLM],
) -> None:
    mem, llm = moved
    facts = _lives(mem)
    assert set(facts) == {"Porto", "Lyon", "Oslo"} and llm.calls["supersede"] > 0
    porto, lyon, oslo = facts["Porto"], facts["Lyon"], facts["Oslo"]
    assert oslo.status == "active"
    assert porto.status == lyon.status == "superseded"
    assert (porto.props["valid_from"], porto.props["valid_to"]) == ("2023-01-10", "2023-04-02")
    assert (lyon.props["valid_from"], lyon.props["valid_to"]) == ("2023-04-02", "2023-08-20")
    assert porto.props["superseded_by"] == lyon.node_id
    assert lyon.props["superseded_by"] == oslo.node_id
    chain = mem.store.edges_of([porto.id, lyon.id, oslo.id], ["SUPERSEDES"])
    assert {(e.src, e.dst) for e in chain} == {(lyon.id, porto.id), (oslo.id, lyon.id)}
    health = mem.stats()["consolidation"]
    assert health["last_runs"]["supersede"]["extra"]["superseded"] == 2


def test_ask_packs_the_current_value_first_and_dates_the_old_ones(
    moved: tuple[Memory, MovingLLM], tmp_path: Path, fake_server: FakeModelServer
) -> None:
    mem, _ = moved
    facts = _lives(mem)
    cfg = config_file(tmp_path, fake_server)
    out = Memcli(config=cfg).ok("ask", "--context-only", "-k", "30", "where does Ana live").stdout
    lines = {city: out.find(f"] Ana lives in {city}") for city in facts}
    assert all(at >= 0 for at in lines.values()), out
    assert lines["Oslo"] < lines["Porto"] and lines["Oslo"] < lines["Lyon"]
    porto_line = next(line for line in out.splitlines() if "Ana lives in Porto" in line)
    assert f"[superseded on 2 April 2023 by {facts['Lyon'].node_id}]" in porto_line
    oslo_line = next(line for line in out.splitlines() if "Ana lives in Oslo" in line)
    assert "superseded" not in oslo_line


def test_the_group_about_the_subject_dates_every_value_and_marks_the_current_one_latest(
    moved: tuple[Memory, MovingLLM],
) -> None:
    mem, _ = moved
    facts = _lives(mem)
    answer = mem.ask("where does Ana live", k=30, context_only=True)
    [group] = [g for g in answer.about if g.subject == "Ana"]
    said = {s.node_id: s for s in group.statements}
    assert {f.node_id for f in facts.values()} <= set(said)
    for city in ("Porto", "Lyon"):
        old = said[facts[city].node_id]
        assert old.status == "superseded" and old.valid_to and not old.latest
    assert said[facts["Oslo"].node_id].latest
    lines = answer.context.split("## About Ana (oldest first)\n", 1)[1].split("\n\n")[0]
    porto = next(line for line in lines.splitlines() if "Ana lives in Porto" in line)
    assert porto.startswith(f"- [{facts['Porto'].node_id}] (10 January 2023) ")
    assert porto.endswith(f"[superseded on 2 April 2023 by {facts['Lyon'].node_id}]")


def test_prune_superseded_removes_exactly_the_replaced_facts(
    moved: tuple[Memory, MovingLLM], tmp_path: Path, fake_server: FakeModelServer
) -> None:
    mem, _ = moved
    facts = _lives(mem)
    before = {n.id for kind in ("episode", "fact", "entity", "segment", "reflection")
              for n in mem.store.iter_nodes(mem.space, kind)}  # fmt: skip
    mem.store.close()
    cli = Memcli(config=config_file(tmp_path, fake_server))
    dry = json.loads(cli.ok("--json", "prune", "--superseded", "--dry-run").stdout)
    assert dry["removed"] == {"fact": 2}
    done = json.loads(cli.ok("--json", "prune", "--superseded", "--yes").stdout)
    assert done["removed"] == {"fact": 2}
    assert integrity(tmp_path / "memory.db")["check"] == ["ok"]
    after_mem = Memory(config(tmp_path, fake_server))
    after = {n.id for kind in ("episode", "fact", "entity", "segment", "reflection")
             for n in after_mem.store.iter_nodes(after_mem.space, kind)}  # fmt: skip
    assert before - after == {facts["Porto"].id, facts["Lyon"].id}
    assert after_mem.store.get_node(facts["Oslo"].id).status == "active"
    dangling = after_mem.store.edges_of([facts["Oslo"].id], ["SUPERSEDES"])
    assert dangling == []  # the chain went with the facts it linked


def test_off_schema_judge_replies_are_counted_and_supersede_nothing(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    llm = MovingLLM()
    llm.invent_ids = False  # no invented fact: a reply is read up to as many facts as turns
    llm.always_bad = {"supersede"}
    fake_server.responder = llm
    mem = Memory(config(tmp_path, fake_server))
    mem.ingest([str(MOVES)])
    stage = mem.consolidate(flush=True).stage("supersede")
    assert stage.failures > 0 and stage.pending > 0
    assert llm.reasks["supersede"] == 2 * stage.failures
    assert all(f.status == "active" for f in _lives(mem).values())
    assert mem.stats()["consolidation"]["pending"]["supersede"] == stage.pending
