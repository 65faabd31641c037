"""The command line's contract with its user: one error line and a fix on stderr, the exit
code STYLE.md's table gives, stdout for data only, and no stray files after a mistake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer
from tests.paths import REPO
from tests.reliability import write_config
from tests.stores import StoreCache

ROOT = REPO
EXAMPLE = ROOT / "examples" / "chat.jsonl"
TINY_LOCOMO = ROOT / "tests" / "data" / "eval" / "locomo-tiny.json"
BAD_LOCOMO = ROOT / "tests" / "data" / "readers" / "locomo-mini.json"


def cli(folder: Path) -> Memcli:
    """memcli in-process with the config folder/memcli.yaml (embeddings off unless a test
    wrote another) and the store folder/m.db."""
    config = folder / "memcli.yaml"
    if not config.exists():
        write_config(folder)
    return Memcli(config=config, db=folder / "m.db")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """tmp_path holding a config and a store with the example chat."""
    cli(tmp_path).ok("ingest", EXAMPLE)
    return tmp_path


def failed(result, code: int, *phrases: str) -> None:
    """Exit `code`, nothing on stdout, one `memcli: error:` message with a fix on stderr."""
    assert result.exit_code == code, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("memcli: error: "), result.stderr
    assert "\n  fix: " in result.stderr, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr


# -- 1. output paths ----------------------------------------------------------------------


def test_graph_output_to_a_missing_directory_or_a_directory_exits_4(store: Path) -> None:
    missing = store / "no" / "such" / "g.xml"
    failed(cli(store)("inspect", "graph", "-o", str(missing)), 4, f"cannot write {missing}")
    failed(cli(store)("inspect", "graph", "-o", str(store)), 4, "it is a directory")


def test_eval_checks_json_out_before_it_runs(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "r.json"
    # The input does not exist either: the output path is checked first, before any work.
    result = cli(tmp_path)("eval", "locomo", str(tmp_path / "none.json"), "--json-out", str(target))
    failed(result, 4, f"cannot write {target}")
    failed(cli(tmp_path)("eval", "locomo", str(TINY_LOCOMO), "--json-out", str(tmp_path)), 4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memcli.yaml"]


# -- 2. durations -------------------------------------------------------------------------


def test_a_duration_before_year_one_is_a_usage_error(store: Path) -> None:
    result = cli(store)("prune", "--older-than", "100000y", "--dry-run")
    failed(result, 2, "before year 1")


# -- 3. usage errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "phrase", "help_of"),
    [
        (["ask", "--bogus", "x"], "no such option: --bogus", "memcli ask"),
        (["ask", "-k", "0", "x"], "'-k'", "memcli ask"),
        (["ask"], "missing argument", "memcli ask"),
        (["bogus"], "no such command 'bogus'", "memcli"),
        (["inspect", "node"], "missing argument", "memcli inspect node"),
        ([], "memcli needs a command: ingest, add, ask", "memcli"),
        (["eval"], "memcli eval needs a command: locomo", "memcli eval"),
    ],
)
def test_usage_errors_are_one_message_and_exit_2(
    tmp_path: Path, args: list[str], phrase: str, help_of: str
) -> None:
    result = Memcli()(*args)
    failed(result, 2, phrase, f"fix: see `{help_of} --help`")
    assert len(result.stderr.splitlines()) == 2 and "╭" not in result.stderr


def test_help_still_exits_0_on_stdout() -> None:
    for args in (["--help"], ["ask", "--help"], ["eval", "--help"]):
        result = Memcli()(*args)
        assert (result.exit_code, result.stderr) == (0, ""), args
        assert "Usage" in result.stdout


# -- 4. config takes --db and --space -----------------------------------------------------


def test_config_accepts_db_and_space_after_the_command(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    db = tmp_path / "other.db"
    result = Memcli(config=config)("config", "--db", db, "--space", "work", "--json")
    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert (shown["db"], shown["space"]) == (str(db), "work")
    assert not db.exists()  # printing the configuration opens no store


# -- 5. inspect graph --json --------------------------------------------------------------


def test_inspect_graph_json_is_one_line(store: Path) -> None:
    result = cli(store)("--json", "inspect", "graph")
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1
    graph = json.loads(result.stdout)
    assert graph["space"] == "default" and len(graph["nodes"]) == 16
    same = cli(store)("inspect", "graph", "--json", "--format", "json")
    assert same.stdout == result.stdout


def test_inspect_graph_json_with_another_format_is_a_usage_error(store: Path) -> None:
    for fmt in ("graphml", "dot"):
        result = cli(store)("--json", "inspect", "graph", "--format", fmt)
        assert result.exit_code == 2 and result.stdout == ""
        error = json.loads(result.stderr)  # under --json the error is a JSON object too
        assert "--json" in error["error"] and fmt in error["error"] and error["fix"]


# -- 6. empty model names -----------------------------------------------------------------


def test_an_empty_llm_model_is_a_config_error_before_any_request(
    store: Path, fake_server: FakeModelServer
) -> None:
    env = {"MEMCLI_LLM_PROVIDER": "ollama", "MEMCLI_LLM_URL": fake_server.ollama_url}
    failed(cli(store)("ask", "Lisbon", env=env), 3, "llm.model is empty", "MEMCLI_LLM_MODEL")
    assert fake_server.requests == []


def test_an_empty_embedding_model_is_a_config_error(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    write_config(tmp_path, embedding={"provider": "ollama", "model": "", "url": fake_server.url})
    failed(cli(tmp_path)("ingest", str(EXAMPLE)), 3, "embedding.model is empty")
    assert fake_server.requests == [] and not (tmp_path / "m.db").exists()


# -- 7. eval names the user's file --------------------------------------------------------


def test_eval_reports_bad_turns_as_ingest_does(tmp_path: Path) -> None:
    evaluated = cli(tmp_path)("eval", "locomo", str(BAD_LOCOMO))
    failed(evaluated, 4, f"{BAD_LOCOMO}:29: conv1 session_1: missing session_1_date_time")
    assert "memcli-eval-" not in evaluated.stderr and "or pass --skip-invalid" not in (
        evaluated.stderr
    )
    ingested = cli(tmp_path)("ingest", str(BAD_LOCOMO))
    problems = [line for line in ingested.stderr.splitlines() if "fix:" not in line]
    assert [line for line in evaluated.stderr.splitlines() if "fix:" not in line] == problems


# -- 8. --limit bounds failing work -------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "task", "limit"),
    [("facts", "extract", 1), ("summarize", "summarize", 1), ("link", "relate", 2)],
)
def test_a_failed_unit_counts_toward_the_limit(
    stores: StoreCache,
    tmp_path: Path,
    fake_server: FakeModelServer,
    stage: str,
    task: str,
    limit: int,
) -> None:
    stores.copy("chat-no-llm", tmp_path / "memory.db")  # the chat after `consolidate --no-llm`
    llm = ScriptedLLM()
    fake_server.responder = llm
    memcli = Memcli(config=config_file(tmp_path, fake_server))
    llm.always_bad = {task}
    result = memcli("--json", "consolidate", "--stage", stage, "--limit", limit)
    report = json.loads(result.stdout)["stages"][stage]
    assert report["failures"] == 1 and report["pending"] > 1  # the failed unit is left pending
    # Exit 8 only when nothing else was done (link's first segment has nothing to link to).
    assert result.exit_code == (0 if report["items"] else 8), result.stderr
    assert llm.calls[task] == 3  # one unit: the first ask and two re-asks, then stop


# -- 9. stores that cannot be opened ------------------------------------------------------


def test_a_store_that_cannot_be_opened_says_so_with_a_fix(tmp_path: Path) -> None:
    cli(tmp_path)("ingest", str(EXAMPLE))
    (tmp_path / "m.db-wal").unlink(missing_ok=True)
    (tmp_path / "m.db-wal").mkdir()  # SQLite cannot create its write-ahead log
    failed(cli(tmp_path)("inspect"), 7, "cannot open database", "writable")


def test_a_file_that_is_no_store_says_so_with_a_fix(tmp_path: Path) -> None:
    (tmp_path / "m.db").write_bytes(b"not a database at all\n" * 200)
    result = cli(tmp_path)("inspect")
    failed(result, 7, "is not a memcli database", "pass --db the path of a memcli store")


# -- 10. a mistyped --db ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "--context-only", "hi"],
        ["inspect"],
        ["inspect", "stats"],
        ["inspect", "node", "ep1"],
        ["inspect", "graph"],
        ["prune", "--node", "ep1", "--dry-run"],
        ["reindex"],
        ["consolidate"],
    ],
)
def test_reading_commands_never_create_a_store(tmp_path: Path, args: list[str]) -> None:
    failed(cli(tmp_path)(*args), 4, f"no memory store at {tmp_path / 'm.db'}", "memcli ingest")
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize(
    ("args", "env", "code"),
    [
        (["ingest", "BAD"], None, 4),
        (["ingest", "--format", "xml", str(EXAMPLE)], None, 2),
        (["ingest", str(EXAMPLE)], {"MEMCLI_EMBEDDING_PROVIDER": "bogus"}, 3),
    ],
)
def test_a_failed_ingest_leaves_no_new_store(
    tmp_path: Path, args: list[str], env: dict[str, str] | None, code: int
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": oops}\n')
    failed(cli(tmp_path)(*[str(bad) if a == "BAD" else a for a in args], env=env), code)
    assert not list(tmp_path.glob("m.db*"))


def test_a_failed_ingest_keeps_an_existing_store(store: Path) -> None:
    bad = store / "bad.jsonl"
    bad.write_text('{"content": oops}\n')
    failed(cli(store)("ingest", str(bad)), 4)
    assert json.loads(cli(store)("--json", "inspect").stdout)["nodes"] == {"episode": 16}


# -- 11. an unknown --format name ---------------------------------------------------------


def test_an_unknown_ingest_format_is_a_usage_error(tmp_path: Path) -> None:
    result = cli(tmp_path)("ingest", "--format", "xml", str(EXAMPLE))
    failed(
        result, 2, "unknown format 'xml'", "auto, chat, chatgpt, claude, jsonl, locomo, transcript"
    )


# -- 14. batch ask keeps lines aligned ----------------------------------------------------


def test_batch_ask_gives_one_line_per_input_line(store: Path) -> None:
    questions = "Lisbon hotel\n\n   \nwhich train?\n"
    result = cli(store)("--json", "ask", "--context-only", "-", input=questions)
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["question"] for r in rows] == ["Lisbon hotel", "", "", "which train?"]
    assert rows[1] == {"question": "", "context": "", "hits": [], "about": []}
    assert rows[0]["hits"] and rows[3]["hits"]
    text = cli(store)("ask", "--context-only", "-", input=questions)
    assert text.exit_code == 0, text.stderr
    lines = text.stdout.split("\n")
    assert len(lines) == 5 and lines[1:3] == ["", ""] and lines[0] and lines[3]


# -- 15. messages -------------------------------------------------------------------------


def test_an_unknown_embedding_provider_is_named_on_a_filled_store(store: Path) -> None:
    env = {"MEMCLI_EMBEDDING_PROVIDER": "bogus"}
    result = cli(store)("ask", "--context-only", "x", env=env)
    failed(result, 3, "unknown embedding provider 'bogus'", "local, ollama, openai, none")
    assert "reindex" not in result.stderr


def test_config_errors_say_what_is_wrong_with_a_fix(tmp_path: Path) -> None:
    result = Memcli(config=tmp_path)("config")
    failed(result, 4, f"config file {tmp_path} is a directory")
    bad = tmp_path / "bad.yaml"
    bad.write_text("llm:\n  model: [unclosed\n")
    failed(Memcli(config=bad)("config"), 3, "invalid YAML")


# -- 16. help and the DOT export ----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["config"], ["reindex"], ["inspect", "stats"], ["inspect", "node"], ["eval"], ["inspect"]],
)
def test_help_has_examples(args: list[str]) -> None:
    result = Memcli()(*args, "--help")
    assert result.exit_code == 0 and "Examples" in result.stdout
    examples = result.stdout.split("Examples")[1]
    assert "memcli " in examples and f" {args[-1]}" in examples


def test_dot_export_names_speaker_and_time(store: Path) -> None:
    result = cli(store)("inspect", "graph", "--format", "dot")
    assert result.exit_code == 0, result.stderr
    blocks = result.stdout.split("];")  # igraph writes one attribute per line, per vertex
    first = next(block for block in blocks if "name=ep1\n" in block)
    assert "speaker=user\n" in first and 'timestamp="2024-03-02T09:14:00"' in first


# -- 17. quiet consolidation --------------------------------------------------------------


def test_quiet_consolidate_prints_nothing_on_success(store: Path) -> None:
    result = cli(store)("-q", "consolidate", "--flush")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    again = cli(store)("-q", "--json", "consolidate")
    assert again.exit_code == 0 and json.loads(again.stdout)["locked"] is False
