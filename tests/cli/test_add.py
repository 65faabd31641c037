"""`memcli add`: one memory from the command line or stdin, and every bad input refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memcli.store import open_store
from tests.cli_runner import Memcli, clean_env, run_process
from tests.fakeserver import FakeModelServer


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    """memcli over tmp_path/m.db with full-text search only."""
    return Memcli(db=tmp_path / "m.db", env={"MEMCLI_EMBEDDING_PROVIDER": "none"})


def test_add_stores_one_episode_and_prints_its_id(cli: Memcli) -> None:
    result = cli.ok("add", "--time", "2024-05-03 09:30", "Flight lands at 9:30")
    assert result.stdout == "stored as ep1 (session memcli-add:2024-05-03)\n"
    assert result.stderr == ""
    [asked] = cli.json("ask", "--context-only", "When does the flight land?")
    assert asked["hits"][0]["node_id"] == "ep1"
    assert asked["hits"][0]["timestamp"] == "2024-05-03T09:30:00"


def test_options_set_speaker_session_time_and_source(cli: Memcli) -> None:
    [record] = cli.json(
        "add", "--role", "Ann", "--session", "standup", "--time", "2024-05-03",
        "--source", "notes", "I will pick up the badges",
    )  # fmt: skip
    assert record == {
        "node_id": "ep1",
        "new": True,
        "session": "standup",
        "timestamp": "2024-05-03T00:00:00",
        "source": "notes",
        "forgotten": False,
    }
    [view] = cli.json("inspect", "node", "ep1")
    assert (view["speaker"], view["session"], view["text"]) == (
        "Ann", "standup", "I will pick up the badges",
    )  # fmt: skip
    assert view["provenance"]["files"] == ["notes"]


def test_adding_the_same_memory_twice_stores_it_once(cli: Memcli) -> None:
    args = ("add", "--time", "2024-05-03", "--role", "user", "Buy oat milk")
    assert cli.json(*args)[0]["new"] is True
    again = cli.ok(*args)
    assert again.stdout == "already stored as ep1 (session memcli-add:2024-05-03)\n"
    assert cli.json("add", "--time", "2024-05-04", "--role", "user", "Buy oat milk")[0]["new"]
    [stats] = cli.json("inspect")
    assert stats["nodes"] == {"episode": 2} and stats["sources"] == 1


def test_without_time_it_is_dated_now_and_chained_in_the_days_session(cli: Memcli) -> None:
    first = cli.json("add", "first note")[0]
    second = cli.json("add", "second note")[0]
    assert first["session"] == second["session"] == f"memcli-add:{first['timestamp'][:10]}"
    [view] = cli.json("inspect", "node", second["node_id"])
    assert {(n["type"], n["node_id"]) for n in view["neighbours"]} == {("NEXT", "ep1")}


def test_dash_reads_the_text_from_stdin(cli: Memcli) -> None:
    text = "Line one of a commit message\n\nDetails on line three."
    [record] = cli.json("add", "--source", "git", "-", input=text + "\n\n")
    [view] = cli.json("inspect", "node", record["node_id"])
    assert view["text"] == text


def test_prune_by_source_forgets_what_was_added_under_it(cli: Memcli) -> None:
    cli.ok("add", "--source", "scratch", "a passing thought")
    cli.ok("add", "--source", "scratch", "another one")
    cli.ok("add", "keep this")
    removed = cli.json("prune", "--source", "scratch", "--yes")[0]
    assert removed["removed"] == {"episode": 2} and removed["sources"] == ["scratch"]
    [stats] = cli.json("inspect")
    assert stats["nodes"] == {"episode": 1}


def test_added_text_is_embedded(tmp_path: Path, fake_server: FakeModelServer) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        f"db: {tmp_path / 'm.db'}\nembedding:\n  provider: ollama\n  model: fake-embed\n"
        f"  url: {fake_server.ollama_url}\n"
    )
    cli = Memcli(config=config)
    cli.ok("add", "The red kite nests in the old oak")
    [asked] = cli.json("ask", "--context-only", "--strategy", "semantic", "red kite nests")
    assert [h["node_id"] for h in asked["hits"]] == ["ep1"]
    with open_store(tmp_path / "m.db") as store:
        assert len(store.get_vectors([1])[1]) == 64


@pytest.mark.parametrize(
    ("args", "stdin", "code", "message"),
    [
        (["add", ""], None, 4, "the text to remember is empty"),
        (["add", "   \n"], None, 4, "the text to remember is empty"),
        (["add", "-"], "", 4, "the text to remember is empty"),
        (["add", "--time", "soonish", "x"], None, 2, "--time expects a date"),
        (["add", "--role", " ", "x"], None, 2, "--role must not be empty"),
        (["add", "--session", "", "x"], None, 2, "--session must not be empty"),
        (["add", "--source", "  ", "x"], None, 2, "--source must not be empty"),
        (["add"], None, 2, "missing argument"),
        (["add", "--bogus", "x"], None, 2, "no such option"),
    ],
)
def test_bad_input_is_one_error_and_leaves_no_store(
    cli: Memcli, tmp_path: Path, args: list[str], stdin: str | None, code: int, message: str
) -> None:
    result = cli(*args, input=stdin)
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("memcli: error: ") and message in result.stderr
    assert not (tmp_path / "m.db").exists()


def test_a_bad_add_on_an_existing_store_changes_nothing(cli: Memcli) -> None:
    cli.ok("add", "kept")
    assert cli("add", "--time", "whenever", "not kept").exit_code == 2
    [stats] = cli.json("inspect")
    assert stats["nodes"] == {"episode": 1}


def test_oversized_and_undecodable_stdin_are_invalid_input(tmp_path: Path) -> None:
    env = clean_env(MEMCLI_EMBEDDING_PROVIDER="none", MEMCLI_DB=str(tmp_path / "m.db"))
    big = run_process("add", "-", env=env, stdin="x" * ((1 << 20) + 1))
    assert big.returncode == 4 and "over the 1 MiB limit" in big.stderr
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    with latin.open("rb") as raw:
        bad = subprocess.run(
            [sys.executable, "-m", "memcli", "add", "-"], stdin=raw, capture_output=True,
            text=True, env=env, timeout=60,
        )  # fmt: skip
    assert bad.returncode == 4
    assert "not UTF-8 text (byte 0xe9 at offset 3)" in bad.stderr and "iconv" in bad.stderr
    assert not (tmp_path / "m.db").exists()


def test_help_shows_examples_and_every_option(cli: Memcli) -> None:
    text = cli.ok("add", "--help").stdout
    for part in ("--role", "--session", "--time", "--source", "Examples", "--source git -"):
        assert part in text, part
