"""A store asked with another embedding model than the one its vectors came from: every
command that would compare or mix vectors refuses with both models named and the fix
(`memcli reindex`, or the setting back), on both backends. The two fake models give
vectors of the same size (as MiniLM and multilingual-e5-small do), so the size alone
could not tell them apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer
from tests.paths import EXAMPLE


def _configure(cli: Memcli, server: FakeModelServer, model: str) -> None:
    assert cli.config is not None
    cli.config.write_text(
        f"embedding:\n  provider: ollama\n  model: {model}\n  url: {server.ollama_url}\n"
        "  max_retries: 0\n"
    )


@pytest.fixture
def cli(tmp_path: Path, store_target: str, fake_server: FakeModelServer) -> Memcli:
    """A store (SQLite or Postgres) ingested with `old-embed`, then configured with
    `new-embed`: another model of the same dimension."""
    memcli = Memcli(config=tmp_path / "memcli.yaml", env={"MEMCLI_DB": store_target})
    _configure(memcli, fake_server, "old-embed")
    memcli.ok("ingest", EXAMPLE)
    memcli.ok("consolidate", "--no-llm", "--flush")
    (tmp_path / "dump.jsonl").write_text(memcli.ok("export", "--vectors").stdout)
    _configure(memcli, fake_server, "new-embed")
    return memcli


def _refused(cli: Memcli, *args: object) -> str:
    result = cli(*args)
    assert result.exit_code == 3, (args, result.stdout, result.stderr)
    assert result.stdout == ""
    error = result.stderr
    assert "embedded with ollama:old-embed" in error and "asks for ollama:new-embed" in error
    assert "fix: run `memcli reindex`" in error
    assert "set embedding.model back to old-embed" in error
    return error


def test_every_command_that_compares_or_mixes_vectors_refuses(cli: Memcli, tmp_path: Path) -> None:
    for strategy in ("hybrid", "semantic", "dwpr", "gam", "beam"):
        error = _refused(cli, "ask", "--context-only", "--strategy", strategy, "hotel")
        assert "--strategy lexical" in error  # what can still be asked meanwhile
    before = cli.json("inspect")[0]["nodes"]
    _refused(cli, "add", "We moved the demo to Thursday")
    more = tmp_path / "more.jsonl"
    more.write_text('{"content": "The ferry leaves at nine", "role": "user"}\n')
    _refused(cli, "ingest", more)
    _refused(cli, "consolidate", "--no-llm", "--flush")
    _refused(cli, "import", tmp_path / "dump.jsonl")
    assert cli.json("inspect")[0]["nodes"] == before  # nothing was written


def test_the_full_text_still_answers_and_inspect_names_both_models(cli: Memcli) -> None:
    [answer] = cli.json("ask", "--context-only", "--strategy", "lexical", "Casa do Largo")
    assert "Casa do Largo" in answer["hits"][0]["text"]
    [stats] = cli.json("inspect")
    assert stats["embedding"] == {
        "provider": "ollama", "model": "old-embed", "dim": 64, "configured": "ollama:new-embed",
    }  # fmt: skip
    assert "configured: ollama:new-embed" in cli.ok("inspect").stdout


def test_doctor_fails_naming_both_models_and_the_fix(cli: Memcli) -> None:
    result = cli("--json", "doctor")
    assert result.exit_code == 3
    checks = {row["check"]: row for row in map(json.loads, result.stdout.splitlines())}
    model = checks["store model"]
    assert model["status"] == "fail"
    assert (model["stored"], model["configured"]) == ("ollama:old-embed", "ollama:new-embed")
    assert "memcli reindex" in model["fix"] and "embedding.model back to old-embed" in model["fix"]
    assert "vectors" not in checks


def test_reindex_is_the_fix_and_setting_the_model_back_too(
    cli: Memcli, fake_server: FakeModelServer
) -> None:
    _configure(cli, fake_server, "old-embed")
    assert cli.json("ask", "--context-only", "hotel")[0]["hits"]
    _configure(cli, fake_server, "new-embed")
    [report] = cli.json("reindex")
    assert report["embedding"] == "ollama:new-embed" and report["resumed"] == 0
    assert cli.json("ask", "--context-only", "hotel")[0]["hits"]
    assert "configured" not in cli.json("inspect")[0]["embedding"]
    cli.ok("add", "We moved the demo to Thursday")
    _configure(cli, fake_server, "old-embed")  # now the old model is the other one
    _refused_other = cli("ask", "--context-only", "hotel")
    assert _refused_other.exit_code == 3
    assert "embedding.model back to new-embed" in _refused_other.stderr


def test_a_store_with_vectors_asked_with_embeddings_off(cli: Memcli) -> None:
    assert cli.config is not None
    cli.config.write_text("embedding:\n  provider: none\n")
    result = cli("ask", "--context-only", "hotel")
    assert result.exit_code == 3
    assert "set embedding.provider back to ollama and embedding.model to old-embed" in (
        result.stderr
    )
    assert cli.json("ask", "--context-only", "--strategy", "lexical", "hotel")[0]["hits"]
