"""Reading input holds one line (up to the message limit) or one document at a time: endless
or newline-free input is refused with bounded memory, and the limit is a setting."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli_runner import REPO, Memcli, clean_env
from tests.peak_memory import run_measured
from tests.reliability import write_config

LIMIT_MB = 200  # the most `ingest` may hold, whatever the input
MB = 1 << 20


def memcli(tmp_path: Path, *args: str) -> list[str]:
    config = write_config(tmp_path)
    db = tmp_path / "memory.db"
    return [sys.executable, "-m", "memcli", "--config", str(config), "--db", str(db), *args]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_endless_input_is_refused_with_bounded_memory(tmp_path: Path) -> None:
    run = run_measured(memcli(tmp_path, "ingest", "--format", "jsonl", "/dev/zero"),
                       env=clean_env(), cwd=REPO)  # fmt: skip
    assert not run.killed and run.returncode == 4, run
    assert "/dev/zero:1: looks like a binary file" in run.stderr
    assert run.peak_mb < LIMIT_MB, run.peak_mb


@pytest.mark.parametrize("fmt", [None, "jsonl", "transcript"])
def test_a_200_mb_line_is_measured_not_held(tmp_path: Path, fmt: str | None) -> None:
    big = tmp_path / "no-newlines.txt"
    with big.open("wb") as out:
        for _ in range(200):
            out.write(b"x" * MB)
    options = ["--format", fmt] if fmt else []
    run = run_measured(memcli(tmp_path, "ingest", *options, str(big)), env=clean_env(), cwd=REPO)
    assert not run.killed and run.returncode == 4, run
    assert f"{big}:1: " in run.stderr and "is 209715200 bytes, over the 1 MiB limit" in run.stderr
    assert "raise ingest.max_message_bytes" in run.stderr and "--skip-invalid" in run.stderr
    assert run.peak_mb < LIMIT_MB, run.peak_mb


def test_a_long_line_among_good_ones_is_skipped_on_request(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    rows = [{"text": "first"}, {"text": "y" * (3 * MB)}, {"text": "third"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    refused = cli("ingest", path)
    assert refused.exit_code == 4
    assert f"{path}:2: record is {3 * MB + 12} bytes, over the 1 MiB limit" in refused.stderr
    assert "fix: raise ingest.max_message_bytes" in refused.stderr
    assert "--format" not in refused.stderr  # the old advice, which did not apply
    [report] = cli.json("ingest", "--skip-invalid", path)
    assert (report["new"], report["invalid"]) == (2, 1)


def test_the_message_limit_is_a_setting(tmp_path: Path) -> None:
    one_message = tmp_path / "long.jsonl"
    one_message.write_text(json.dumps({"text": "z" * (2 * MB)}) + "\n")
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    refused = cli("ingest", one_message)
    assert refused.exit_code == 4 and "over the 1 MiB limit" in refused.stderr
    raised = {"MEMCLI_INGEST_MAX_MESSAGE_BYTES": str(3 * MB)}
    stored = cli("--json", "ingest", one_message, env=raised)
    assert stored.exit_code == 0 and json.loads(stored.stdout)["new"] == 1
    lower = write_config(tmp_path, ingest={"max_message_bytes": 1000})
    small = Memcli(config=lower, db=tmp_path / "small.db")
    too_long = small("add", "w" * 1001)
    assert too_long.exit_code == 4
    assert "the text to remember is 1001 bytes, over the 1000 bytes limit" in too_long.stderr
    assert "max_message_bytes" in too_long.stderr


def test_a_whole_json_document_has_its_own_limit(tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi " * 400}]}))
    config = write_config(tmp_path, ingest={"max_document_bytes": 1000})
    refused = Memcli(config=config, db=tmp_path / "m.db")("ingest", chat)
    assert refused.exit_code == 4
    assert f"{chat}: the file is over the 1000 bytes limit for one JSON document" in (
        refused.stderr
    )
    assert "max_document_bytes" in refused.stderr


def test_add_reads_stdin_only_up_to_the_limit(tmp_path: Path) -> None:
    config = write_config(tmp_path, ingest={"max_message_bytes": 100})
    result = Memcli(config=config, db=tmp_path / "m.db")("add", "-", input="v" * 5000)
    assert result.exit_code == 4
    assert "<stdin>: the text to remember is over the 100 bytes limit" in result.stderr


def bad_lines(path: Path, count: int) -> Path:
    """One message, then `count` lines that are JSON objects but no messages."""
    with path.open("w") as out:
        out.write('{"text": "the one good line"}\n')
        out.write('{"a": 1}\n' * count)
    return path


@pytest.mark.parametrize("from_stdin", [False, True], ids=["file", "stdin"])
def test_bad_lines_are_counted_not_held(tmp_path: Path, from_stdin: bool) -> None:
    # 400,000 bad lines held as records and messages took 160 MB; only the first 1,000
    # are kept now, the rest counted.
    path = bad_lines(tmp_path / "bad.jsonl", 400_000)
    args = ["ingest", "-"] if from_stdin else ["ingest", str(path)]
    stdin = path if from_stdin else None
    run = run_measured(memcli(tmp_path, *args), env=clean_env(), cwd=REPO, stdin=stdin)
    assert not run.killed and run.returncode == 4, run
    assert run.peak_mb < 100, run.peak_mb
    assert ":2: missing 'content' (or 'text')" in run.stderr
    assert "... and 399,990 more problems" in run.stderr


def test_past_the_kept_ones_bad_records_are_still_counted(tmp_path: Path) -> None:
    path = bad_lines(tmp_path / "bad.jsonl", 1500)
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    refused = cli("ingest", path)
    assert refused.exit_code == 4 and "... and 1,490 more problems" in refused.stderr
    [report] = cli.json("ingest", "--skip-invalid", path)
    assert (report["new"], report["invalid"]) == (1, 1500)
