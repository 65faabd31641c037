"""`inspect` does not count work as pending forever that no run will do with the current
settings: the stages that need an LLM (or embeddings) say what they wait for."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_runner import Memcli
from tests.paths import EXAMPLE
from tests.reliability import write_config


def test_without_an_llm_the_llm_stages_wait_instead_of_pending(tmp_path: Path) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    cli.ok("consolidate", "--flush")
    text = cli.ok("inspect").stdout
    rows = {line.split("│")[1].strip(): line.split("│")[-2].strip()
            for line in text.splitlines() if line.startswith("│")}  # fmt: skip
    assert rows["facts"] == rows["link"] == rows["words"] == "-"
    assert rows["concepts"] == "0"
    assert "waiting for an LLM (llm.provider none): summarize 4, link 4, gate 4, facts 16" in text
    assert "waiting for embeddings (embedding.provider none): words" in text
    [stats] = cli.json("inspect")
    health = stats["consolidation"]
    assert health["pending"]["facts"] == 16  # the count is still there for scripts
    assert health["blocked"]["facts"] == "an LLM (llm.provider none)"


def test_with_an_llm_configured_pending_is_pending(tmp_path: Path) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    llm = {"MEMCLI_LLM_PROVIDER": "ollama", "MEMCLI_LLM_MODEL": "some-model"}
    result = cli("--json", "inspect", env=llm)
    health = json.loads(result.stdout)["consolidation"]
    assert health["blocked"] == {"words": "embeddings (embedding.provider none)"}
    assert health["pending"]["facts"] > 0
