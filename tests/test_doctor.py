"""`memcli doctor` against the fake model server: each check with its status, detail and fix,
and the exit code of the first failure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer, refused_url
from tests.llama_server import LlamaServer, llm_settings


def _cli(tmp_path: Path, llm: str, embedding: str = "  provider: none\n") -> Memcli:
    config = tmp_path / "memcli.yaml"
    config.write_text(f"embedding:\n{embedding}llm:\n{llm}")
    return Memcli(config=config)


def _openai(url: str, model: str = "fake-model") -> str:
    return f"  provider: openai\n  model: {model}\n  url: {url}\n  api_key_env: ''\n"


def _checks(cli: Memcli) -> tuple[int, dict[str, dict[str, Any]]]:
    result = cli("--json", "doctor")
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return result.exit_code, {row["check"]: row for row in rows}


def test_no_llm_configured_is_a_warning_with_the_fix(tmp_path: Path) -> None:
    code, checks = _checks(_cli(tmp_path, "  provider: none\n"))
    assert code == 0
    assert checks["llm"]["status"] == "warn" and "llm.provider" in checks["llm"]["fix"]
    assert checks["embedding"]["status"] == "warn"  # full-text only
    assert set(checks) == {"embedding", "llm"}


def test_a_reachable_server_passes_every_check(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.reply('{"colour": "blue"}')
    embedding = f"  provider: openai\n  model: e\n  url: {fake_server.openai_url}\n"
    code, checks = _checks(_cli(tmp_path, _openai(fake_server.openai_url), embedding))
    assert code == 0, checks
    assert [c for c in checks if checks[c]["status"] != "ok"] == []
    assert checks["embedding"]["dimensions"] == 64
    assert checks["structured output"]["form"] == "json_schema"
    assert checks["context"]["context_length"] == 32768 and checks["context"]["source"] == "server"
    assert checks["speed"]["tokens_per_second"] > 0


def test_an_unreachable_server_fails_with_exit_5(tmp_path: Path) -> None:
    code, checks = _checks(_cli(tmp_path, _openai(refused_url() + "/v1")))
    assert code == 5
    assert checks["reachable"]["status"] == "fail" and "running" in checks["reachable"]["fix"]
    assert "structured output" not in checks


def test_an_unknown_model_fails_naming_the_served_ones(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.models = {"llama-3.2-1b", "qwen2.5-0.5b"}
    code, checks = _checks(_cli(tmp_path, _openai(fake_server.openai_url, "gpt-9")))
    assert code == 5
    assert checks["model"]["status"] == "fail" and "gpt-9" in checks["model"]["detail"]
    assert "llama-3.2-1b, qwen2.5-0.5b" in checks["model"]["fix"]
    assert not fake_server.requests_to("/v1/chat/completions")


def test_an_unknown_ollama_model_says_pull_it(tmp_path: Path, fake_server: FakeModelServer) -> None:
    fake_server.models = {"llama3.2:latest"}
    llm = f"  provider: ollama\n  model: qwen3:4b\n  url: {fake_server.ollama_url}\n"
    code, checks = _checks(_cli(tmp_path, llm))
    assert code == 5 and "`ollama pull qwen3:4b`" in checks["model"]["fix"]


def test_a_server_without_json_schema_support_is_a_warning(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.structured = "prompt"
    fake_server.advertise_context = False
    fake_server.responder = lambda body: '{"colour": "blue"}'
    code, checks = _checks(_cli(tmp_path, _openai(fake_server.openai_url)))
    assert code == 0
    structured = checks["structured output"]
    assert structured["status"] == "warn" and structured["form"] == "prompt"
    assert "re-asks" in structured["fix"]
    assert (
        checks["context"]["status"] == "warn" and "llm.context_length" in checks["context"]["fix"]
    )


def test_a_reply_that_never_fits_the_schema_fails_with_exit_6(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = lambda body: "Sure! The sky is blue."
    code, checks = _checks(_cli(tmp_path, _openai(fake_server.openai_url)))
    assert code == 6 and checks["structured output"]["status"] == "fail"


def test_text_output_prints_a_fix_line_under_each_problem(tmp_path: Path) -> None:
    result = _cli(tmp_path, "  provider: none\n")("doctor")
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and lines[0].startswith("warn  embedding:")
    assert lines[1].strip().startswith("fix: set embedding.provider")


def test_help_names_the_exit_codes_and_has_examples() -> None:
    result = Memcli()("doctor", "--help")
    assert result.exit_code == 0
    assert "memcli --json doctor" in result.stdout and "5 when a server" in result.stdout


@pytest.mark.real_model
def test_doctor_against_the_real_model(llama: LlamaServer, tmp_path: Path) -> None:
    settings = llm_settings(llama)
    llm = "".join(f"  {key}: {json.dumps(value)}\n" for key, value in settings.items())
    code, checks = _checks(_cli(tmp_path, llm))
    assert code == 0, checks
    assert checks["model"]["status"] == "ok"  # llama.cpp lists the alias
    assert checks["structured output"]["form"] == "json_object+schema"
    assert checks["speed"]["tokens_per_second"] > 0
