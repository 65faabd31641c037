"""The command line end to end: ingest, ask, inspect, config, reindex, eval, errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer
from tests.paths import REPO

ROOT = REPO
EXAMPLE = ROOT / "examples" / "chat.jsonl"
TINY_LOCOMO = ROOT / "tests" / "data" / "eval" / "locomo-tiny.json"


def write_embedding(config: Path, provider: str, url: str, model: str = "fake-embed") -> None:
    """A config whose store is memory.db beside it, with the given embedding model."""
    config.write_text(
        f"db: {config.parent / 'memory.db'}\nembedding:\n  provider: {provider}\n"
        f"  model: {model}\n  url: {url}\n  max_retries: 0\n"
    )


@pytest.fixture
def cli(tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    """memcli in-process; the config embeds with the fake server into tmp_path/memory.db."""
    write_embedding(tmp_path / "memcli.yaml", "ollama", fake_server.ollama_url)
    return Memcli(config=tmp_path / "memcli.yaml")


def test_ingest_reports_and_is_idempotent(cli: Memcli) -> None:
    first = cli("ingest", str(EXAMPLE))
    assert first.exit_code == 0, first.stderr
    assert "16 new episodes in 3 sessions" in first.stdout
    again = cli.json("ingest", str(EXAMPLE))[0]
    assert again["new"] == 0 and again["skipped"] == 16
    stats = cli.json("inspect")[0]
    assert stats["nodes"] == {"episode": 16}
    assert stats["edges"] == {"NEXT": 13}
    assert stats["embedding"] == {"provider": "ollama", "model": "fake-embed", "dim": 64}


def test_ingest_from_stdin_with_format(cli: Memcli) -> None:
    text = "Ana: I planted tomatoes today\nBo: Nice, which kind?\nAna: Cherry tomatoes\n"
    result = cli("--json", "ingest", "--format", "transcript", "-", input=text)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["new"] == 3


def test_bad_line_rejects_whole_file(cli: Memcli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "fine"}\n{"content": oops}\n{"content": "also fine"}\n')
    result = cli("ingest", str(bad))
    assert result.exit_code == 4
    assert "bad.jsonl:2:" in result.stderr
    assert result.stdout == ""
    assert not (tmp_path / "memory.db").exists()  # the failed run leaves no new store behind


def test_skip_invalid_keeps_the_good_records(cli: Memcli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "fine"}\n{"content": oops}\n{"content": "also fine"}\n')
    report = cli.json("ingest", "--skip-invalid", str(bad))[0]
    assert (report["new"], report["invalid"]) == (2, 1)


def test_missing_file_is_not_found(cli: Memcli, tmp_path: Path) -> None:
    result = cli("ingest", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 4
    assert "nope.jsonl" in result.stderr


def test_ask_context_only_json_contract(cli: Memcli) -> None:
    cli.ok("ingest", EXAMPLE)
    question = "Which hotel in Alfama did we book rooms at?"
    out = cli.json("ask", "--context-only", "-k", "3", question)[0]
    assert set(out) == {"question", "context", "hits", "about"}
    assert len(out["hits"]) == 3
    hit = out["hits"][0]
    keys = {"node_id", "kind", "ref", "session", "speaker", "timestamp", "text", "score"}
    assert keys | {"sources"} == set(hit)
    assert any("Casa do Largo" in h["text"] for h in out["hits"])
    assert "[ep" in out["context"] and "2024" in out["context"]
    scores = [h["score"] for h in out["hits"]]
    assert scores == sorted(scores, reverse=True)


def test_ask_text_output_is_the_context(cli: Memcli) -> None:
    cli.ok("ingest", EXAMPLE)
    result = cli("ask", "--context-only", "fado show with Ana")
    assert result.exit_code == 0
    assert "fado" in result.stdout and "Conversation excerpts" in result.stdout


def test_ask_batch_from_stdin_one_line_each(cli: Memcli) -> None:
    cli.ok("ingest", EXAMPLE)
    questions = "Where is the hotel?\n\nWhat is the cat called?\nWhen does Ana land?\n"
    rows = cli.json("ask", "--context-only", "-", input=questions)
    assert [r["question"] for r in rows] == [
        "Where is the hotel?",
        "",  # a blank line still gives its line, so output lines match input lines
        "What is the cat called?",
        "When does Ana land?",
    ]
    text = cli("ask", "--context-only", "-", input=questions)
    assert len(text.stdout.splitlines()) == 4


def test_every_strategy_answers(cli: Memcli) -> None:
    cli.ok("ingest", EXAMPLE)
    for strategy in ("lexical", "semantic", "hybrid", "beam", "watercircles", "astar"):
        out = cli.json("ask", "--context-only", "--strategy", strategy, "cat Miso keyboard")[0]
        assert out["hits"], strategy
        assert "Miso" in out["hits"][0]["text"]


def test_unknown_strategy_flag_is_a_usage_error(cli: Memcli) -> None:
    cli.ok("ingest", EXAMPLE)
    result = cli("ask", "--context-only", "--strategy", "hybird", "x")
    assert result.exit_code == 2
    assert "did you mean 'hybrid'" in result.stderr


def test_ask_without_llm_says_how_to_configure(cli: Memcli) -> None:
    cli.ok("ingest", EXAMPLE)
    result = cli("ask", "Which hotel?")
    assert result.exit_code == 3
    assert "llm.provider" in result.stderr and "--context-only" in result.stderr
    assert result.stdout == ""


def test_empty_store_gives_empty_context(cli: Memcli, tmp_path: Path) -> None:
    from memcli.store import open_store

    open_store(tmp_path / "memory.db").close()  # a store that exists but holds nothing
    out = cli.json("ask", "--context-only", "anything at all")[0]
    assert out["hits"] == [] and out["context"] == ""


def test_options_after_the_command(cli: Memcli, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    result = cli("ingest", str(EXAMPLE), "--db", str(other), "--space", "work", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["new"] == 16
    stats = cli.json("inspect", "--db", str(other), "--space", "work")[0]
    assert stats["nodes"] == {"episode": 16} and stats["spaces"] == ["work"]
    missing = cli("inspect", "--db", str(other))  # the default space is not in that file
    assert missing.exit_code == 4 and "pass --space one of: work" in missing.stderr


def test_spaces_are_isolated(cli: Memcli) -> None:
    cli.ok("--space", "alice", "ingest", EXAMPLE)
    cli.ok("--space", "bob", "ingest", "-", "--format", "transcript", input="Bob: a quiet day\n")
    out = cli.json("--space", "bob", "ask", "--context-only", "hotel")[0]
    assert out["hits"] == []
    assert cli.json("--space", "alice", "ask", "--context-only", "hotel")[0]["hits"]


def test_inspect_node_shows_neighbours_and_provenance(cli: Memcli) -> None:
    cli.ok("ingest", EXAMPLE)
    view = cli.json("inspect", "node", "ep2")[0]
    assert view["ref"] == "m2" and view["speaker"] == "assistant"
    assert {(n["direction"], n["node_id"]) for n in view["neighbours"]} == {
        ("in", "ep1"),
        ("out", "ep3"),
    }
    assert view["provenance"]["files"] == [str(EXAMPLE)]
    text = cli("inspect", "node", "ep2")
    assert text.exit_code == 0 and "NEXT" in text.stdout


def test_inspect_unknown_node_is_not_found(cli: Memcli) -> None:
    cli.ok("ingest", EXAMPLE)
    result = cli("inspect", "node", "ep999")
    assert result.exit_code == 4
    assert "ep999" in result.stderr


def test_config_command_masks_secrets(cli: Memcli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-do-not-print")
    result = cli("config")
    assert result.exit_code == 0
    assert "sk-test-do-not-print" not in result.stdout + result.stderr
    assert "provider: ollama" in result.stdout
    assert str(cli.config) in result.stderr


def test_bad_config_exits_3(cli: Memcli) -> None:
    cli.config.write_text("retrieval:\n  k: lots\n")
    result = cli("inspect")
    assert result.exit_code == 3
    assert "retrieval.k" in result.stderr


def test_model_change_needs_reindex(cli: Memcli, fake_server: FakeModelServer) -> None:
    cli.ok("ingest", EXAMPLE)
    write_embedding(cli.config, "ollama", fake_server.ollama_url, model="other-embed")
    result = cli("ask", "--context-only", "hotel")
    assert result.exit_code == 3
    assert "memcli reindex" in result.stderr
    report = cli.json("reindex")[0]
    assert report["embedded"] == 16 and report["embedding"] == "ollama:other-embed"
    assert cli.json("ask", "--context-only", "hotel")[0]["hits"]


def test_unreachable_embedder_exits_5_and_writes_nothing(cli: Memcli, tmp_path: Path) -> None:
    from tests.fakeserver import refused_url

    write_embedding(cli.config, "ollama", refused_url())
    result = cli("ingest", str(EXAMPLE))
    assert result.exit_code == 5
    assert "127.0.0.1" in result.stderr
    assert not (tmp_path / "memory.db").exists()  # the failed run leaves no new store behind


def test_fulltext_only_store_works(cli: Memcli) -> None:
    write_embedding(cli.config, "none", "")
    cli.ok("ingest", EXAMPLE)
    out = cli.json("ask", "--context-only", "Casa do Largo")[0]
    assert "Casa do Largo" in out["hits"][0]["text"]
    result = cli("ask", "--context-only", "--strategy", "semantic", "hotel")
    assert result.exit_code == 3 and "embedding" in result.stderr


def test_ingest_reads_gzip_and_knows_it_is_the_same_log(cli: Memcli, tmp_path: Path) -> None:
    packed = tmp_path / "chat.jsonl.gz"
    packed.write_bytes(gzip.compress(EXAMPLE.read_bytes()))
    first = cli.json("ingest", packed)[0]
    assert first["new"] == 16
    plain = cli.json("ingest", EXAMPLE)[0]
    assert plain["new"] == 0 and plain["skipped"] == 16


def test_debug_shows_traceback_only_when_asked(cli: Memcli) -> None:
    plain = cli("inspect", "node", "ep1")
    assert "Traceback" not in plain.stderr
    debug = cli("--debug", "inspect", "node", "ep1")
    assert debug.exit_code == 4 and "Traceback" in debug.stderr


def test_eval_locomo_on_a_tiny_fixture(cli: Memcli, tmp_path: Path) -> None:
    out_file = tmp_path / "results.json"
    result = cli(
        "eval",
        "locomo",
        str(TINY_LOCOMO),
        "--strategy",
        "lexical,hybrid",
        "--json-out",
        str(out_file),
    )
    assert result.exit_code == 0, result.stderr
    assert "R@10" in result.stdout
    report = json.loads(out_file.read_text())
    assert set(report["results"]) == {"lexical", "hybrid"}
    assert report["questions"]["hybrid"], "every scored question is listed"
    rows = report["questions"]["hybrid"]
    assert len(rows) == 4, "category 5 is not scored"
    assert {"question", "evidence", "retrieved", "recall", "covered"} <= set(rows[0])
    assert rows[0]["recall"]["5"] == 1.0, "the one turn about the cello is found"
    assert report["results"]["hybrid"]["n"] == 4


def test_help_has_examples_and_start_up_is_light() -> None:
    result = Memcli()("ingest", "--help")
    assert result.exit_code == 0 and "memcli ingest" in result.stdout
    code = (
        "import sys, memcli.cli\n"
        "heavy = {'torch', 'sentence_transformers', 'igraph', 'httpx', 'ollama', 'numpy'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr


def test_installed_entry_point_runs(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("memcli")
    assert exe.exists(), "install the package (pip install -e .) so the memcli script exists"
    env = {"MEMCLI_EMBEDDING_PROVIDER": "none", "MEMCLI_DB": str(tmp_path / "m.db"), "PATH": ""}
    env["MEMCLI_CONFIG"] = str(tmp_path / "empty.yaml")
    (tmp_path / "empty.yaml").write_text("")
    done = subprocess.run(
        [str(exe), "--json", "ingest", str(EXAMPLE)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["new"] == 16
    module = subprocess.run(
        [sys.executable, "-m", "memcli", "--version"], capture_output=True, text=True, env=env
    )
    assert module.returncode == 0 and module.stdout.startswith("memcli ")


def test_eval_never_stores_benchmark_annotations(cli: Memcli, tmp_path: Path) -> None:
    cli.ok("ingest", TINY_LOCOMO)
    out = cli.json("ask", "--context-only", "SECRET-ANNOTATION-TEXT adversarial")[0]
    assert all("SECRET" not in h["text"] for h in out["hits"])
    assert cli.json("inspect")[0]["nodes"] == {"episode": 8}
