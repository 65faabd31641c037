"""`memcli export` then `memcli import` into a fresh store: the LoCoMo dev conversations,
consolidated without an LLM, come back with the same counts, the same nodes and the same
`ask --context-only` output for the dev questions, with every retrieval strategy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.stores import LOCOMO_DEV, Built

STRATEGIES = ("hybrid", "gam", "dwpr", "lexical", "semantic")
QUESTIONS = 60


def dev_questions() -> str:
    assert LOCOMO_DEV is not None
    samples = json.loads(LOCOMO_DEV.read_text(encoding="utf-8"))
    asked = [
        qa["question"] for s in samples for qa in s["qa"] if qa.get("category") in (1, 2, 3, 4)
    ]
    return "\n".join(asked[:: max(1, len(asked) // QUESTIONS)][:QUESTIONS]) + "\n"


def counts(cli: Memcli) -> dict[str, Any]:
    stats = cli.json("inspect")[0]
    keep = ("nodes", "edges", "sessions", "sources", "spaces", "embedding")
    return {**{k: stats[k] for k in keep}, "pending": stats["consolidation"]["pending"]}


def contexts(cli: Memcli, questions: str) -> dict[str, str]:
    return {s: cli.ok("ask", "--context-only", "--strategy", s, "-", input=questions).stdout
            for s in STRATEGIES}  # fmt: skip


def store_cli(folder: Path, server: FakeModelServer, db: Path) -> Memcli:
    folder.mkdir(parents=True, exist_ok=True)
    return Memcli(config=config_file(folder, server, llm=False), db=db)


@pytest.mark.parametrize("vectors", [False, True], ids=["re-embedded", "with-vectors"])
def test_dev_store_round_trips_into_a_fresh_store(
    dev_store: Built, fake_server: FakeModelServer, tmp_path: Path, vectors: bool
) -> None:
    source = store_cli(tmp_path / "a", fake_server, dev_store.path)
    dump = tmp_path / "dev.jsonl.gz"
    source.ok("export", "-o", dump, *(["--vectors"] if vectors else []))
    target = store_cli(tmp_path / "b", fake_server, tmp_path / "restored.db")
    embeds = len(fake_server.requests_to("/api/embed"))
    report = target.json("import", dump)[0]
    assert report["ids"] == "kept" and report["existing"] == {}
    assert (report["embedded"] > 0) != vectors and (report["vectors_from_file"] > 0) == vectors
    if vectors:
        assert len(fake_server.requests_to("/api/embed")) == embeds  # no model call at all

    before, after = counts(source), counts(target)
    assert before == after
    assert before["nodes"]["segment"] > 0 and before["nodes"]["concept"] > 0
    assert sum(report["new"].values()) == sum(before["nodes"].values())

    questions = dev_questions()
    assert len(questions.splitlines()) == QUESTIONS
    assert contexts(source, questions) == contexts(target, questions)
    for kind in ("episode", "segment", "concept"):
        (first,) = source.json("list", "--kind", kind, "--limit", 1)
        shown = source.ok("--json", "inspect", "node", first["node_id"]).stdout
        assert shown == target.ok("--json", "inspect", "node", first["node_id"]).stdout
    # Consolidation's progress came along: the restored store has nothing to redo.
    pending = ["consolidate", "--no-llm", "--flush", "--dry-run"]
    assert target.json(*pending)[0]["stages"] == source.json(*pending)[0]["stages"]


def test_reindex_keeps_what_ask_packs(
    dev_store: Built, fake_server: FakeModelServer, tmp_path: Path
) -> None:
    # Entities are embedded as profiles of their mentions, not as their names: a reindex
    # must make the same vectors again, or the graph strategies would find other memories.
    db = tmp_path / "copy.db"
    shutil.copyfile(dev_store.path, db)
    cli = store_cli(tmp_path / "a", fake_server, db)
    assert cli.json("inspect")[0]["nodes"]["entity"] > 0
    questions = dev_questions()
    before = contexts(cli, questions)
    cli.ok("reindex")
    assert contexts(cli, questions) == before
