"""`memcli prune` on the command line: confirmation, output, exit codes, scrubbing, and
forgetting one of two consolidated conversations end to end."""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memcli.config import Config, EmbeddingConfig, LLMConfig
from memcli.store import open_store
from tests.cli_runner import Memcli, clean_env
from tests.fakemodel import consolidation_reply
from tests.fakeserver import FakeModelServer
from tests.paths import DATA
from tests.prune_acceptance import run as run_acceptance
from tests.prune_graph import ALL, Graph, build, remaining
from tests.reliability import llm_config, raw_bytes, write_config
from tests.stores import StoreCache

TWO_CONVERSATIONS = DATA / "reliability" / "two-conversations.json"


@pytest.fixture
def cli_db(stores: StoreCache, tmp_path: Path) -> tuple[Memcli, Graph]:
    """The hand-built graph (`tests.prune_graph.build`) copied to tmp_path/cli.db, and
    memcli on it, configured by MEMCLI_CONFIG."""
    built = stores.copy("prune-graph", tmp_path / "cli.db")
    cli = Memcli(db=built.path, env={"MEMCLI_CONFIG": str(write_config(tmp_path))})
    return cli, Graph(built.info["ids"])


def test_cli_without_a_terminal_needs_yes(cli_db: tuple[Memcli, Graph]) -> None:
    cli, _ = cli_db
    result = cli("prune", "--session", "s1")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "no terminal to confirm" in result.stderr and "--yes" in result.stderr
    with open_store(cli.db) as store:
        assert len(remaining(store)) == len(ALL)


def test_cli_without_a_selector_is_a_usage_error(cli_db: tuple[Memcli, Graph]) -> None:
    cli, _ = cli_db
    result = cli("prune", "--yes")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "needs at least one selector" in result.stderr


def test_cli_dry_run_text_and_json(cli_db: tuple[Memcli, Graph]) -> None:
    cli, g = cli_db
    result = cli("prune", "--session", "s1", "--dry-run")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "would remove 9 nodes and 17 edges"
    assert "  episode           3" in lines and "source files: a.jsonl" in lines
    assert f"  {g.pid('e1'):<8} episode    Ana rescued a greyhound called Pistachio" in lines
    assert result.stderr.strip() == "dry run: nothing was changed"
    result = cli("--json", "prune", "--node", g.pid("f3"), "--yes")
    assert result.exit_code == 0 and result.stderr == ""
    report = json.loads(result.stdout)
    assert report == {
        "dry_run": False,
        "removed": {"fact": 1},
        "edges": 2,
        "sources": [],
        "kept_shared": 0,
        "cache_entries": 0,
        "forgotten": 0,  # a fact: no turn is recorded as forgotten
        "embedded_again": 0,  # nor is any turn embedded again
        "stale_vectors": 0,
        "examples": [{"node_id": g.pid("f3"), "kind": "fact", "text": "Ana lives in Lisbon"}],
        "vacuumed": False,
        "bytes_before": report["bytes_before"],
        "bytes_after": report["bytes_after"],
    }


def test_cli_errors_have_their_exit_codes(cli_db: tuple[Memcli, Graph]) -> None:
    cli, _ = cli_db
    cases = [
        (["--older-than", "6m"], 2, "'m' is ambiguous"),
        (["--before", "soon"], 2, "ISO date"),
        (["--source", "nope.jsonl"], 4, "candidates:"),
        (["--node", "ep999"], 4, "no node 'ep999'"),
        (["--session", "s9"], 4, "sessions include: s1, s2, s3"),
        (["--orphans", "--session", "s1"], 2, "--orphans cannot be combined"),
    ]
    for args, code, message in cases:
        result = cli("prune", *args, "--yes")
        assert (result.exit_code, result.stdout) == (code, ""), args
        assert result.stderr.startswith("memcli: error: ") and message in result.stderr, args


def test_forgotten_text_is_gone_from_ask_inspect_and_after_vacuum_the_file(
    cli_db: tuple[Memcli, Graph],
) -> None:
    cli, g = cli_db
    sentence = "Ana rescued a greyhound called Pistachio"
    asked = cli("--json", "ask", "--context-only", "greyhound Pistachio")
    assert sentence in asked.stdout
    assert sentence.encode() in raw_bytes(cli.db)
    result = cli("prune", "--session", "s1", "--yes")
    assert result.exit_code == 0, result.stderr
    asked = cli("--json", "ask", "--context-only", "greyhound Pistachio")
    answer = json.loads(asked.stdout)
    assert asked.exit_code == 0 and sentence not in asked.stdout
    assert "Pistachio" not in answer["context"] + json.dumps(answer["hits"])
    shown = cli("inspect", "node", g.pid("e1"))
    assert shown.exit_code == 4 and shown.stdout == "" and "no node" in shown.stderr
    result = cli("--json", "prune", "--vacuum", "--yes")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["vacuumed"] is True and report["bytes_after"] <= report["bytes_before"]
    data = raw_bytes(cli.db)
    for needle in (sentence, "Pistachio", "pistachio", "greyhound", "lighthouse"):
        assert needle.encode() not in data, needle
    assert b"Porto" in data  # what was kept is still there
    wal = Path(str(cli.db) + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0


def test_prune_and_vacuum_in_one_go(cli_db: tuple[Memcli, Graph]) -> None:
    cli, _ = cli_db
    result = cli("prune", "--source", "b.jsonl", "--vacuum", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "vacuumed: " in result.stdout
    assert "kept 1 episode that another source also holds" in result.stdout
    data = raw_bytes(cli.db)
    for needle in (b"quinces", b"Porto", b"porto", b"vase"):
        assert needle not in data, needle
    assert b"Pistachio" in data and b"lighthouse" in data


def on_terminal(args: list[str], answer: str, config: str) -> tuple[int, str, str]:
    """Run memcli with stdin and stderr on a pseudo-terminal; answer its question."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memcli", *args],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=clean_env(MEMCLI_CONFIG=config),
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while b"for good?" not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            seen += os.read(master, 4096)
    os.write(master, answer.encode() + b"\n")
    stdout, _ = proc.communicate(timeout=60)
    with contextlib.suppress(OSError):  # EIO once the child has closed the terminal
        while select.select([master], [], [], 0.2)[0]:
            chunk = os.read(master, 4096)
            if not chunk:
                break
            seen += chunk
    os.close(master)
    return proc.returncode, stdout.decode(), seen.decode(errors="replace")


@pytest.mark.parametrize(("answer", "left"), [("n", len(ALL)), ("y", len(ALL) - 9)])
def test_on_a_terminal_prune_asks_first(
    cli_db: tuple[Memcli, Graph], answer: str, left: int
) -> None:
    cli, _ = cli_db
    code, stdout, terminal = on_terminal(
        ["--db", str(cli.db), "prune", "--session", "s1"], answer, cli.env["MEMCLI_CONFIG"]
    )
    assert code == 0
    assert "remove 3 episode, 1 segment, 1 fact, 1 reflection, 1 concept, 2 entity" in terminal
    assert "(17 edges), for good? [y/N]" in terminal
    if answer == "y":
        assert stdout.startswith("removed 9 nodes and 17 edges\n")
    else:
        assert stdout == "" and "nothing removed" in terminal
    with open_store(cli.db) as store:
        assert len(remaining(store)) == left


# --- end to end: two conversations, consolidated, one forgotten ------------------------------


@pytest.mark.parametrize("with_llm", [False, True], ids=["no-llm", "fake-llm"])
def test_forgetting_one_conversation_keeps_the_other_whole(
    tmp_path: Path, fake_server: FakeModelServer, with_llm: bool
) -> None:
    fake_server.responder = consolidation_reply
    models = llm_config(fake_server.url)
    base = Config(
        embedding=EmbeddingConfig(**models["embedding"]),
        llm=LLMConfig(**models["llm"]) if with_llm else LLMConfig(),
    )
    out = run_acceptance(TWO_CONVERSATIONS, tmp_path, base)
    removed = out["removed"]
    assert out["removed_exactly_derived_only"], out
    assert out["episodes_left_of_pruned"] == 0
    assert removed["removed"]["episode"] == 10 and removed["removed"]["segment"] >= 1
    assert removed["sources"] == [str(tmp_path / "pa.json")]
    if with_llm:
        assert out["consolidated"]["failures"] == 0
        # pb has 9 turns, one fact each but for the one the memory gate finds dull
        assert removed["removed"]["fact"] == out["nodes_before"]["fact"] - 8
        assert removed["removed"].get("reflection", 0) >= 1
        assert removed["cache_entries"] > 0
    # The other conversation's hits now come from it alone, and it answers no worse.
    before, after = out["recall_before"]["pb"], out["recall_after"]["pb"]
    assert before["foreign_refs"] > 0 and after["foreign_refs"] == 0
    assert after["recall@10"] >= before["recall@10"]
    assert out["recall_after"]["pa"]["recall@10"] == 0.0
    assert out["in_file_before_prune"] and not out["sentence_in_file_after_vacuum"]
    assert not out["sentence_found_by_ask"] and not out["sentence_in_context"]
    assert (
        out["vacuum"]["vacuumed"] and out["vacuum"]["bytes_after"] < out["vacuum"]["bytes_before"]
    )


def test_prune_waits_for_no_running_consolidation(cli_db: tuple[Memcli, Graph]) -> None:
    cli, _ = cli_db
    with open_store(cli.db) as store, store.transaction():
        store.conn.execute(
            "INSERT INTO locks (name, pid, host, acquired_at) VALUES (?, ?, ?, ?)",
            ("consolidate", 4242, "another-host", "2024-06-01T00:00:00+00:00"),
        )
    result = cli("prune", "--session", "s1", "--yes")
    assert result.exit_code == 7 and result.stdout == ""
    assert "lock is held by pid 4242 on host another-host" in result.stderr
    assert "nothing was removed" in result.stderr and "memcli consolidate --unlock" in result.stderr
    with open_store(cli.db) as store:
        assert len(remaining(store)) == len(ALL)
        store.conn.execute("DELETE FROM locks")
    result = cli("prune", "--session", "s1", "--yes")
    assert result.exit_code == 0, result.stderr
    with open_store(cli.db) as store:
        assert store.try_lock("consolidate") is None  # prune let go of it


def test_only_the_commands_own_space_option_selects_a_whole_space(
    cli_db: tuple[Memcli, Graph],
) -> None:
    cli, _ = cli_db
    with open_store(cli.db) as store:
        build(store, space="other")
    result = cli("--space", "other", "prune", "--yes")
    assert result.exit_code == 2 and "needs at least one selector" in result.stderr
    result = cli("--json", "prune", "--space", "other", "--yes")
    assert result.exit_code == 0, result.stderr
    assert sum(json.loads(result.stdout)["removed"].values()) == len(ALL)
    with open_store(cli.db) as store:
        assert remaining(store, "other") == set() and len(remaining(store)) == len(ALL)
    # With another selector, --space only says where.
    with open_store(cli.db) as store:
        build(store, space="other")
    result = cli("--json", "prune", "--space", "other", "--session", "s2", "--yes")
    assert json.loads(result.stdout)["removed"]["episode"] == 2
