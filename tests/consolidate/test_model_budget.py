"""What consolidation with a model costs per turn, and replies that are not refused for a
number out of range (issue 36, item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file, opened
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer


class OutOfRange(ScriptedLLM):
    """ScriptedLLM writing a belief of 2 and confidences of 90, as SmolLM2 was seen to."""

    def facts(self, values: dict[str, str]) -> dict[str, Any]:
        reply = super().facts(values)
        for fact in reply["facts"]:
            fact["belief"] = 2
        return reply

    def relate(self, values: dict[str, str]) -> dict[str, Any]:
        reply = super().relate(values)
        for link in reply["links"]:
            link["confidence"] = 90
        return reply


def test_numbers_out_of_range_are_clamped_not_refused(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    llm = OutOfRange()
    llm.invent_ids = False
    fake_server.responder = llm
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True)
    for name in ("facts", "link"):
        stage = report.stage(name)
        assert stage.failures == 0 and stage.extra.get("json_reasked", 0) == 0, stage
        assert stage.extra["json_first_try"] > 0
    facts = list(mem.store.iter_nodes(mem.space, "fact"))
    assert facts and {f.belief for f in facts} == {1.0}
    segments = [s.id for s in mem.store.iter_nodes(mem.space, "segment")]
    related = [e for e in mem.store.edges_of(segments, ["RELATED"]) if e.type == "RELATED"]
    assert related and {e.weight for e in related} == {1.0}


def test_consolidate_and_inspect_print_the_cost_per_turn(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = ScriptedLLM()
    cli = Memcli(config=config_file(chat_store, fake_server))
    result = cli("--json", "consolidate", "--flush")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    tokens = report["totals"]["prompt_tokens"] + report["totals"]["completion_tokens"]
    per = report["per_turn"]
    assert per["turns"] == 28 and tokens > 0  # every turn of the chat, all asked about
    assert per["tokens"] == round(tokens / 28, 1)
    assert 0 < per["seconds"] <= report["seconds"]
    health = json.loads(cli("--json", "inspect").stdout)["consolidation"]
    assert health["per_turn"] == per["tokens"]
    assert f"{per['tokens']:,.0f} tokens per turn consolidated" in cli("inspect").stdout
    again = cli("consolidate")  # nothing new: no cost per turn to give
    assert again.exit_code == 0 and "per turn" not in again.stderr
    assert json.loads(cli("--json", "consolidate").stdout)["per_turn"] is None
