"""The selective memory gate: segments with nothing memorable skip LLM extraction, stay
searchable, and the gate's decisions and savings are recorded per run and shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcli.memory import Memory
from tests.cli_runner import Memcli
from tests.consolidate_helpers import config, config_file
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer

HELLO = [("Ana", "Hey Ben, good to see you!"), ("Ben", "Good to see you too, thanks!")]
BYE = [("Ana", "Thanks, talk soon!"), ("Ben", "Talk soon, bye!")]
CONTENT = [
    [("Ana", "The glassblowing class moved to the studio on Harbour Street."),
     ("Ben", "Does the glassblowing teacher still fire the kiln on Fridays?")],
    [("Ben", "My marathon training plan goes up to thirty kilometres now."),
     ("Ana", "Thirty kilometres before the marathon sounds tough.")],
    [("Ana", "We booked the camping site by the lake for three nights."),
     ("Ben", "Bring the camping stove, the lake gets cold at night.")],
]  # fmt: skip


def _chat(path: Path) -> Path:
    sessions = [HELLO + middle + BYE for middle in CONTENT] + [HELLO + BYE]
    rows = [
        {"id": f"s{n}:{i}", "session": f"s{n}", "timestamp": f"2023-0{n}-10T10:00:00",
         "speaker": speaker, "content": text}
        for n, turns in enumerate(sessions, start=1)
        for i, (speaker, text) in enumerate(turns, start=1)
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _segments(mem: Memory) -> int:
    return sum(1 for _ in mem.store.iter_nodes(mem.space, "segment"))


def _consolidated(folder: Path, server: FakeModelServer, gate: bool) -> tuple[Memory, Any]:
    llm = ScriptedLLM()
    server.responder = llm
    mem = Memory(config(folder, server, gate=gate))
    mem.ingest([str(_chat(folder / "chat.jsonl"))])
    return mem, (mem.consolidate(flush=True), llm)


def test_a_segment_of_greetings_is_skipped_and_saves_extraction(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    on, (report, llm_on) = _consolidated(tmp_path / "on", fake_server, gate=True)
    gate = report.stage("gate")
    saved = gate.extra["tokens_saved"]
    # Every greeting and goodbye (4 a session) is dull; the greetings-only session is skipped.
    # (How many segments the other sessions make is the segmenter's business, not the gate's.)
    kept = _segments(on) - 1
    assert gate.extra == {"kept": kept, "skipped": 1, "turns_skipped": 16, "tokens_saved": saved}
    assert saved > 0 and gate.llm_calls == 0
    skipped = [s for s in on.store.iter_nodes(on.space, "segment") if s.props["gate"] == "skip"]
    assert len(skipped) == 1 and skipped[0].session == "s4"
    assert report.stage("entities").extra["gated"] == 1
    _, (report_off, llm_off) = _consolidated(tmp_path / "off", fake_server, gate=False)
    assert report_off.stage("gate").extra == {}
    # One request carries a group's facts and entities: the skipped session is never asked.
    assert llm_on.calls["extract"] < llm_off.calls["extract"]
    facts_sent = report.stage("facts").prompt_tokens
    assert facts_sent < report_off.stage("facts").prompt_tokens
    assert report.stage("entities").prompt_tokens == report_off.stage("entities").prompt_tokens == 0
    hits = on.ask("talk soon bye", strategy="lexical", context_only=True).hits
    assert any(h.node.session == "s4" for h in hits)  # skipped turns stay searchable


def test_inspect_shows_the_gate(tmp_path: Path, fake_server: FakeModelServer) -> None:
    mem, _ = _consolidated(tmp_path, fake_server, gate=True)
    total = _segments(mem)
    mem.store.close()
    cli = Memcli(config=config_file(tmp_path, fake_server, gate=True))
    assert f"memory gate: 1 of {total} segments skipped" in cli.ok("inspect").stdout
    data = json.loads(cli.ok("--json", "inspect").stdout)
    assert data["consolidation"]["gate"]["skipped"] == 1
    assert data["consolidation"]["last_runs"]["gate"]["extra"]["kept"] == total - 1
