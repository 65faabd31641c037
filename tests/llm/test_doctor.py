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
from tests.store.test_store_damaged import _schema_pages


def _cli(tmp_path: Path, llm: str, embedding: str = "  provider: none\n") -> Memcli:
    config = tmp_path / "memcli.yaml"
    config.write_text(f"embedding:\n{embedding}llm:\n{llm}")
    return Memcli(config=config, db=tmp_path / "memory.db")


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
    assert [c for c in checks if checks[c]["status"] != "ok"] == ["vectors"]
    assert checks["vectors"]["status"] == "skip"  # no store yet: nothing to compare
    assert "no memory store at" in checks["vectors"]["detail"]
    assert not (tmp_path / "memory.db").exists()  # and doctor made none
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


CHAT = [
    {"session": s, "speaker": who, "text": text}
    for s, turns in (
        ("s1", [("Ana", "We finally replaced the van's battery at the garage."),
                ("Ben", "Does it start first time now?"), ("Ana", "It starts first time now.")]),
        ("s2", [("Ben", "How was the concert in Porto?"),
                ("Ana", "Loud, and the band played two encores."), ("Ben", "Lucky you!")]),
    )
    for who, text in turns
]  # fmt: skip


def _store_with_vectors(tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    """A store of CHAT ingested with the fake server's embeddings, and doctor's config for it."""
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps(turn) + "\n" for turn in CHAT))
    embedding = f"  provider: openai\n  model: e\n  url: {fake_server.openai_url}\n"
    cli = _cli(tmp_path, "  provider: none\n", embedding)
    cli.ok("ingest", chat)
    return cli


def _rewrite_turn_vectors(db: Path | None, vector_of: Any) -> None:
    """Store vector_of(turn) as every turn's vector (as an older memcli would have made it)."""
    from memcli.store import open_store

    with open_store(db) as store:
        turns = list(store.iter_nodes("default", "episode"))
        with store.transaction():
            store.put_vectors((t.id, "default", "episode", vector_of(t)) for t in turns)


def test_vectors_of_the_turn_alone_warn_until_reindex(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    from memcli.models import embedding_text
    from tests.fakeserver import fake_embedding

    cli = _store_with_vectors(tmp_path, fake_server)
    code, checks = _checks(cli)
    assert code == 0 and checks["vectors"]["status"] == "ok", checks["vectors"]
    assert checks["vectors"]["sampled"] == checks["vectors"]["current"] == 4  # 2 first turns

    # vectors of the turn alone, as memcli made them before contextual turn embeddings
    _rewrite_turn_vectors(cli.db, lambda t: fake_embedding(embedding_text(t.text, t.speaker)))
    code, checks = _checks(cli)
    vectors = checks["vectors"]
    assert code == 0 and vectors["status"] == "warn"  # a warning: recall is lower, not broken
    assert vectors["plain"] == vectors["sampled"] == 4 and vectors["current"] == 0
    assert "memcli reindex" in vectors["fix"] and "turn alone" in vectors["detail"]
    text = Memcli(config=cli.config)("doctor", "--db", cli.db).stdout  # --db after it too
    assert "warn  vectors: 4 of 4 turns sampled" in text and "fix: run `memcli reindex`" in text

    cli.ok("reindex")
    code, checks = _checks(cli)
    assert checks["vectors"]["status"] == "ok" and checks["vectors"]["current"] == 4


def test_vectors_that_match_no_way_of_embedding_the_turn_warn(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    from tests.fakeserver import fake_embedding

    cli = _store_with_vectors(tmp_path, fake_server)
    _rewrite_turn_vectors(cli.db, lambda t: fake_embedding(f"another model's view of {t.text}"))
    _, checks = _checks(cli)
    vectors = checks["vectors"]
    assert vectors["status"] == "warn" and vectors["other"] == 4 and vectors["plain"] == 0
    assert "another version or other settings" in vectors["detail"]
    assert "memcli reindex" in vectors["fix"]


def test_a_store_of_another_embedding_model_is_named_with_its_fix(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _store_with_vectors(tmp_path, fake_server)
    other = f"  provider: openai\n  model: other-model\n  url: {fake_server.openai_url}\n"
    code, checks = _checks(_cli(tmp_path, "  provider: none\n", other))
    model = checks["store model"]
    assert code == 3 and model["status"] == "fail"  # ask and ingest refuse such a store
    assert "openai:e" in model["detail"] and "openai:other-model" in model["detail"]
    assert "memcli reindex" in model["fix"] and "embedding.model back to e" in model["fix"]
    assert "vectors" not in checks  # nothing to compare vectors of two models with
    assert cli.db is not None and cli.db.exists()


@pytest.mark.real_model
def test_doctor_against_the_real_model(llama: LlamaServer, tmp_path: Path) -> None:
    settings = llm_settings(llama)
    llm = "".join(f"  {key}: {json.dumps(value)}\n" for key, value in settings.items())
    code, checks = _checks(_cli(tmp_path, llm))
    assert code == 0, checks
    assert checks["model"]["status"] == "ok"  # llama.cpp lists the alias
    assert checks["structured output"]["form"] == "json_object+schema"
    assert checks["speed"]["tokens_per_second"] > 0


def test_turns_that_embed_alike_with_and_without_context_tell_nothing(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    # The fake model embeds a bag of words: a turn after the same words from the same
    # speaker embeds alike both ways, as a turn longer than a real model's limit does.
    chat = tmp_path / "chat.jsonl"
    turns = [{"session": "s1", "speaker": "Ana", "text": "Bring the red tent."}] * 3
    chat.write_text("".join(json.dumps(turn) + "\n" for turn in turns))
    embedding = f"  provider: openai\n  model: e\n  url: {fake_server.openai_url}\n"
    cli = _cli(tmp_path, "  provider: none\n", embedding)
    cli.ok("ingest", chat)
    _, checks = _checks(cli)
    assert checks["vectors"]["status"] == "skip" and checks["vectors"]["sampled"] == 0
    assert "alike" in checks["vectors"]["detail"]


def test_turns_stored_while_embeddings_were_off_warn_until_reindex(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps(turn) + "\n" for turn in CHAT))
    _cli(tmp_path, "  provider: none\n").ok("ingest", chat)  # no embedder: no vectors
    embedding = f"  provider: openai\n  model: e\n  url: {fake_server.openai_url}\n"
    cli = _cli(tmp_path, "  provider: none\n", embedding)
    code, checks = _checks(cli)
    model = checks["store model"]
    assert code == 3 and model["status"] == "fail", model
    assert "embedded with none" in model["detail"] and "memcli reindex" in model["fix"]
    cli.ok("reindex")
    _, checks = _checks(cli)
    assert checks["vectors"]["status"] == "ok" and checks["vectors"]["current"] == 4


def test_the_store_file_is_checked_by_the_sqlite_memcli_uses(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _store_with_vectors(tmp_path, fake_server)
    code, checks = _checks(cli)
    assert code == 0, checks
    assert checks["store"]["status"] == "ok" and "integrity check" in checks["store"]["detail"]
    db = tmp_path / "memory.db"
    cli.ok("inspect")  # checkpointed: the pages are in the file
    schema = _schema_pages(db)
    with db.open("r+b") as file:  # every page header but the schema's, which stays readable
        for page in range(1, db.stat().st_size // 4096):
            if page + 1 not in schema:
                file.seek(page * 4096)
                file.write(b"\xff" * 12)
    code, checks = _checks(cli)
    assert code == 7, checks
    assert checks["store"]["status"] == "fail"
    assert "restore it from a backup" in checks["store"]["fix"]
    assert "memcli doctor" not in checks["store"]["fix"]  # the fix that sent the user here
