"""`memcli ask` with a model whose window is smaller than the packed memory: the context is
packed again in fewer words until the prompt fits; `--context-only` asks the model server
nothing at all."""

from __future__ import annotations

import json
from pathlib import Path

from memcli.text import count_tokens
from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer

QUESTION = "Where does the rowing club keep boat 7?"


def _cli(tmp_path: Path, server: FakeModelServer, **llm: object) -> Memcli:
    settings = "".join(f"  {key}: {value}\n" for key, value in llm.items())
    config = tmp_path / "memcli.yaml"
    config.write_text(
        f"db: {tmp_path / 'memory.db'}\nembedding:\n  provider: none\n"
        f"llm:\n  provider: openai\n  model: fake\n  url: {server.openai_url}\n"
        f"  max_retries: 0\n{settings}retrieval:\n  word_budget: 2000\n"
    )
    cli = Memcli(config=config)
    lines = [
        {"speaker": "Ivo" if n % 2 else "Lea", "session": "s1",
         "content": f"Boat {n} of the rowing club waits at dock {n} beside the crane."}
        for n in range(120)
    ]  # fmt: skip
    chat = tmp_path / "chat.jsonl"
    chat.write_text("\n".join(json.dumps(line) for line in lines))
    cli.ok("ingest", chat)
    return cli


def test_a_context_too_long_for_the_window_is_packed_again(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.reply('{"answer": "At dock 7.", "citations": []}')
    cli = _cli(tmp_path, fake_server, context_length=1200)
    [record] = cli.json("ask", QUESTION)
    assert record["answer"] == "At dock 7."
    [sent] = fake_server.requests_to("/v1/chat/completions")  # pre-checked: sent once
    prompt = sent.body["messages"][0]["content"]
    assert count_tokens(prompt) + sent.body["max_tokens"] <= 1200
    assert record["context"] in prompt  # the answer's context is the one the model read
    assert len(record["context"].split()) < 2000 * 0.5


def test_a_window_too_small_for_any_context_is_an_error_with_a_fix(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _cli(tmp_path, fake_server, context_length=600)
    result = cli("ask", QUESTION)
    assert result.exit_code == 5 and not fake_server.requests_to("/v1/chat/completions")
    assert "does not fit" in result.stderr and "llm.context_length" in result.stderr


def test_context_only_never_asks_the_model_server(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _cli(tmp_path, fake_server, context_length=0)
    before = len(fake_server.requests)
    cli.ok("ask", "--context-only", QUESTION)
    assert len(fake_server.requests) == before  # no chat, no /props, no /v1/models
