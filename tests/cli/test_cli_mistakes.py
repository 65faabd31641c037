"""Everyday mistakes and edge cases a newcomer meets in the first hour: each is a clear
usage error, a hint, or plain success, never a surprise."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcli import Memory
from memcli.errors import UsageError
from tests.cli_runner import REPO, Memcli
from tests.paths import EXAMPLE
from tests.reliability import write_config


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    """memcli over a store holding the example chat in the spaces `default` and `work`
    (no embeddings)."""
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    cli.ok("--space", "work", "ingest", EXAMPLE)
    return cli


def _usage(result, code: int, *phrases: str) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith("memcli: error: ") and "\n  fix: " in result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr
    return result.stderr


# -- defect 6 -------------------------------------------------------------------------------


@pytest.mark.parametrize("question", ["", "   "])
def test_an_empty_question_is_a_usage_error(cli: Memcli, question: str) -> None:
    _usage(cli("ask", "--context-only", question), 2, "the question is empty")


def test_blank_lines_of_a_batch_still_give_blank_lines(cli: Memcli) -> None:
    result = cli.ok("ask", "--context-only", "--strategy", "lexical", "-", input="\nhotel\n")
    assert result.stdout.split("\n")[0] == "" and "hotel" in result.stdout.lower()


def test_an_unknown_strategy_flag_is_a_usage_error(cli: Memcli) -> None:
    _usage(cli("ask", "--context-only", "--strategy", "hybird", "q"), 2, "did you mean 'hybrid'")
    _usage(cli("eval", "locomo", "x.json", "--strategy", "lexical,nope"), 2, "'nope'", "hybrid")


def test_an_unknown_strategy_in_the_config_file_stays_a_config_error(
    cli: Memcli, tmp_path: Path
) -> None:
    config = write_config(tmp_path, retrieval={"strategy": "nope"})
    result = Memcli(config=config, db=cli.db)("ask", "--context-only", "q")
    _usage(result, 3, "unknown retrieval strategy 'nope'")


@pytest.mark.parametrize("command", [["ask", "--context-only", "q"], ["inspect"], ["prune",
    "--older-than", "1d", "--dry-run"], ["consolidate", "--no-llm"]])  # fmt: skip
def test_an_unknown_space_names_the_spaces_there_are(cli: Memcli, command: list[str]) -> None:
    stderr = _usage(cli("--space", "wrok", *command), 4, "no space 'wrok'")
    assert "did you mean 'work'" in stderr and "default, work" in stderr


def test_a_new_space_is_made_by_ingest_and_an_empty_store_is_no_error(
    cli: Memcli, tmp_path: Path
) -> None:
    cli.ok("--space", "fresh", "ingest", EXAMPLE)
    assert cli.json("--space", "fresh", "inspect")[0]["nodes"]["episode"] > 0
    empty = Memcli(config=write_config(tmp_path), db=tmp_path / "e.db")
    empty.ok("ingest", "-", input="")
    assert empty.ok("--space", "anything", "inspect").exit_code == 0


@pytest.mark.parametrize("content", [b"", b"  \n\t\n"])
def test_an_empty_input_file_is_0_new_episodes(cli: Memcli, tmp_path: Path, content: bytes) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(content)
    before = cli.json("inspect")[0]
    result = cli.ok("ingest", empty)
    assert result.stdout.startswith("0 new episodes")
    assert cli.ok("ingest", "-", input="").stdout.startswith("0 new episodes")
    [report] = cli.json("ingest", empty)
    assert report["new"] == 0 and report["skipped"] == 0 and report["invalid"] == 0
    assert cli.json("inspect")[0]["sources"] == before["sources"]  # and leaves no trace


# -- defect 10: the shared options after every command ------------------------------------


def test_reindex_takes_db_and_space_after_the_command(cli: Memcli, tmp_path: Path) -> None:
    bare = Memcli(config=cli.config)  # no leading --db
    [report] = bare.json("reindex", "--db", cli.db, "--space", "work")
    assert report["nodes"] == 32  # every space: reindex works on the whole file


@pytest.mark.parametrize("command", ["locomo", "chats"])
def test_eval_takes_db_and_space_after_the_command(tmp_path: Path, command: str) -> None:
    target = {
        "locomo": REPO / "tests" / "data" / "eval" / "locomo-tiny.json",
        "chats": REPO / "tests" / "data" / "eval" / "chats",
    }[command]
    cli = Memcli(config=write_config(tmp_path))
    args = ["eval", command, target, "--strategy", "lexical", "--k", "5"]
    [report] = cli.json(*args, "--db", tmp_path / "unused.db", "--space", "x")
    assert report["results"]["lexical"]["n"] > 0
    assert not (tmp_path / "unused.db").exists()


# -- audit ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["inspect", "node", "ep999"], ["prune", "--node", "ep999",
    "--dry-run"]])  # fmt: skip
def test_an_unknown_node_id_points_at_the_command_that_lists_ids(
    cli: Memcli, command: list[str]
) -> None:
    stderr = _usage(cli("--space", "work", *command), 4, "no node 'ep999' in space 'work'")
    assert "memcli list" in stderr.split("fix:")[1]


def test_a_file_not_one_record_of_which_reads_points_at_the_format(
    cli: Memcli, tmp_path: Path
) -> None:
    transcript = tmp_path / "talk.txt"
    transcript.write_text("Ann: the tomatoes are ripe\nBob: pick them today\n")
    stderr = _usage(cli("ingest", "--format", "jsonl", transcript), 4, "talk.txt:1: invalid JSON")
    fix = stderr.split("fix:")[1]
    assert "not one record of" in fix and "--format" in fix and "--skip-invalid" not in fix
    cli.ok("ingest", transcript)  # detected as a transcript, it reads


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["prune", "--node", "12", "--dry-run"], 2),
        (["eval", "locomo", "nowhere.json"], 4),
        (["eval", "chats", "nowhere/"], 4),
        (["--config", "LIST", "inspect"], 3),
    ],
)
def test_typical_mistakes_get_a_fix_line(
    cli: Memcli, tmp_path: Path, args: list[str], code: int
) -> None:
    listing = tmp_path / "list.yaml"
    listing.write_text("- retrieval\n- k: 5\n")  # a list, not a mapping of keys
    _usage(cli(*[str(listing) if a == "LIST" else a for a in args]), code)


@pytest.mark.parametrize("typed", ["[ep5]", " EP5 "])
def test_an_id_pasted_from_the_packed_context_is_read(cli: Memcli, typed: str) -> None:
    assert cli.json("inspect", "node", typed)[0]["node_id"] == "ep5"
    [preview] = cli.json("prune", "--node", typed, "--dry-run")
    assert preview["removed"] == {"episode": 1}


def test_counts_of_one_are_singular(cli: Memcli, tmp_path: Path) -> None:
    assert "sources   1 source, 3 sessions\n" in cli.ok("inspect").stdout
    bad = tmp_path / "one-bad.jsonl"
    bad.write_text('{"content": "kept"}\nnot json\n')
    assert ", 1 invalid record skipped (" in cli.ok("ingest", "--skip-invalid", bad).stdout


def test_a_log_ingested_again_after_it_grew_is_forgotten_by_every_version(
    cli: Memcli, tmp_path: Path
) -> None:
    log = tmp_path / "grow.jsonl"
    log.write_text('{"session": "g", "content": "first turn of the log"}\n')
    cli.ok("--space", "log", "ingest", log)
    with log.open("a") as fh:
        fh.write('{"session": "g", "content": "a turn added later"}\n')
    cli.ok("--space", "log", "ingest", log)
    stderr = _usage(cli("--space", "log", "prune", "--source", log, "--dry-run"), 4)
    every = stderr.split("all of them (")[1].split(")")[0].split()  # the fix's own options
    [preview] = cli.json("--space", "log", "prune", *every, "--dry-run")
    assert preview["removed"] == {"episode": 2}


# Counts too large to mean anything (-k, --limit, --offset, --page) are usage errors
# (exit 2) with the range, not an OverflowError from SQLite.

HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["ask", "--context-only", "-k", HUGE, "hotel"], "k must be from 1 to 10000"),
        (["ask", "--context-only", "-k", "10001", "hotel"], "k must be from 1 to 10000"),
        (["list", "--limit", HUGE], "--limit is too large"),
        (["list", "--offset", HUGE], "--offset is too large"),
        (["list", "--page", "99999999999", "--limit", "100"], "--page is too large"),
    ],
)
def test_huge_counts_are_usage_errors(tmp_path: Path, args: list[str], phrase: str) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    result = cli(*args)
    assert result.exit_code == 2, result.stderr
    assert phrase in result.stderr and "OverflowError" not in result.stderr


def test_the_python_api_says_the_same(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with Memory.open(tmp_path / "m.db", config=config) as mem:
        mem.ingest(str(EXAMPLE))
        with pytest.raises(UsageError, match="k must be from 1 to 10000"):
            mem.recall("hotel", k=10**20)
