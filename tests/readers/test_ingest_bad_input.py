"""Bad input, end to end through `memcli ingest`: exit 4, a `file:line` message, nothing written.

Each case runs against a store that already holds a good file, and checks the store is
exactly as it was afterwards. Big and binary inputs are generated in tmp_path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcli.config import Config, EmbeddingConfig
from memcli.errors import InvalidInput
from memcli.memory import Memory
from memcli.models import BadRecord, Episode
from memcli.readers import read_source
from memcli.readers.jsonl import load_document
from tests.cli_runner import Memcli, clean_env, run_process
from tests.paths import DATA
from tests.reliability import counts, write_config

DATA = DATA / "reliability"
TEN_MB = 10 * 1024 * 1024


def _write(name: str, content: bytes | str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return path

    return make


def _copy(name: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        return Path(shutil.copy(DATA / name, tmp / name))

    return make


def _missing(tmp: Path) -> Path:
    return tmp / "nowhere" / "chat.jsonl"


def _directory(tmp: Path) -> Path:
    (tmp / "adir.jsonl").mkdir()
    return tmp / "adir.jsonl"


def _under_a_file(tmp: Path) -> Path:
    (tmp / "plain.txt").write_text("Ann: hi\n")
    return tmp / "plain.txt" / "child.jsonl"


def _mode_000(tmp: Path) -> Path:
    path = _write("secret.jsonl", '{"content": "x"}\n')(tmp)
    path.chmod(0)
    return path


# (id, make the input, extra ingest options, expected problem after "PATH")
CASES: list[tuple[str, Callable[[Path], Path], list[str], str]] = [
    (
        "binary garbage",
        _write("blob.jsonl", bytes(range(1, 256)) * 64),
        [],
        r":2: not UTF-8 text \(byte 0x80 at column 118\)",
    ),
    (
        "NUL bytes",
        _write("nul.txt", b"Ann: hi\nBen: \x00\x01\x02"),
        [],
        r":2: looks like a binary file",
    ),
    ("latin-1", _copy("latin1.txt"), [], r":1: not UTF-8 text \(byte 0xe9 at column 13\)"),
    (
        "10 MB single line",
        _write("huge.jsonl", b"x" * TEN_MB),
        [],
        r":1: record is 10485760 bytes, over the 1 MiB limit",
    ),
    (
        "10 MB JSON string",
        _write("huge.json", json.dumps({"messages": [{"content": "y" * TEN_MB}]})),
        [],
        r":1: message is 10485760 bytes, over the 1 MiB limit",
    ),
    ("deeply nested JSON", _write("deep.json", "[" * 100_000), [], r":1: invalid JSON"),
    ("deeply nested JSONL", _write("deep.jsonl", "[" * 100_000), [], r":1: invalid JSON"),
    (
        "LoCoMo without a session date",
        _copy("locomo-missing-date.json"),
        [],
        r":12: r1 session_2: missing session_2_date_time",
    ),
    (
        "unknown format by content",
        _write("notes.dat", "just some prose\nwithout any speakers at all\n"),
        [],
        r":1: cannot tell the format",
    ),
    ("missing path", _missing, [], r": no such file"),
    ("a directory", _directory, [], r": is a directory, not a file"),
    ("a path through a file", _under_a_file, [], r": cannot read the file \(Not a directory\)"),
]
if os.geteuid() != 0:  # root reads files whatever their mode, so this case needs a normal user
    CASES.append(("mode 000", _mode_000, [], r": cannot read the file \(Permission denied\)"))


def _seeded_store(tmp_path: Path) -> tuple[Path, Memcli, dict[str, Any]]:
    db = tmp_path / "m.db"
    cli = Memcli(db=db, env={"MEMCLI_CONFIG": str(write_config(tmp_path))})
    cli.ok("ingest", DATA / "good.jsonl")
    return db, cli, counts(db)


@pytest.mark.parametrize(
    ("make", "options", "problem"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_rejected_with_its_location_and_writes_nothing(
    tmp_path: Path, make: Callable[[Path], Path], options: list[str], problem: str
) -> None:
    db, cli, before = _seeded_store(tmp_path)
    path = make(tmp_path)
    result = cli("ingest", *options, path)
    assert result.exit_code == 4, result.stderr
    assert result.stdout == ""
    where = re.escape(str(path))
    assert re.match(rf"memcli: error: {where}{problem}", result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert counts(db) == before


def test_one_bad_file_among_good_ones_rejects_the_whole_run(tmp_path: Path) -> None:
    db, cli, before = _seeded_store(tmp_path)
    good = tmp_path / "more.jsonl"
    good.write_text('{"content": "a brand new turn about apricots"}\n')
    bad = _copy("locomo-missing-date.json")(tmp_path)
    result = cli("ingest", good, bad)
    assert result.exit_code == 4 and result.stdout == ""
    assert f"{bad}:12: " in result.stderr and "--skip-invalid" in result.stderr
    assert counts(db) == before


def test_skip_invalid_stores_the_good_records_and_counts_the_bad(tmp_path: Path) -> None:
    db, cli, before = _seeded_store(tmp_path)
    bad = _copy("locomo-missing-date.json")(tmp_path)
    result = cli("--json", "ingest", "--skip-invalid", bad)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["new"] == 2 and json.loads(result.stdout)["invalid"] == 1
    assert counts(db)["nodes"]["episode"] == before["nodes"]["episode"] + 2


@pytest.mark.parametrize("case", ["binary garbage", "10 MB single line", "missing path"])
def test_bad_input_through_the_real_entry_point(tmp_path: Path, case: str) -> None:
    _, make, options, problem = next(c for c in CASES if c[0] == case)
    db, cli, before = _seeded_store(tmp_path)
    path = make(tmp_path)
    env = clean_env(**cli.env)
    result = run_process("--db", str(db), "ingest", *options, str(path), env=env)
    assert result.returncode == 4
    assert result.stdout == ""
    assert re.match(rf"memcli: error: {re.escape(str(path))}{problem}", result.stderr)
    assert counts(db) == before


# --- property-based: random records through the whole ingest, in every format ---------------

FIELDS = st.sampled_from(["content", "text", "speaker", "role", "timestamp", "session", "id"])
VALUES = st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.lists(st.integers())
RECORD = st.dictionaries(FIELDS, VALUES, max_size=5) | VALUES


def _as_format(fmt: str, records: list[Any]) -> str:
    """The records written the way a file of `fmt` would hold them."""
    if fmt == "jsonl":
        return "\n".join(json.dumps(r) for r in records) + "\n"
    if fmt == "chat":
        return json.dumps({"messages": records})
    if fmt == "locomo":
        conversation = {"session_1_date_time": "8 May 2023", "session_1": records}
        return json.dumps([{"sample_id": "fuzz", "conversation": conversation}], indent=1)
    return "\n".join(
        f"{r.get('speaker')}: {r.get('content')}" if isinstance(r, dict) else str(r)
        for r in records
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(RECORD, min_size=1, max_size=6),
    fmt=st.sampled_from(["jsonl", "chat", "locomo", "transcript"]),
)
def test_random_records_are_stored_all_or_nothing(records: list[Any], fmt: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.input"
        path.write_text(_as_format(fmt, records), encoding="utf-8")
        try:
            parsed = read_source(str(path), fmt).records
        except InvalidInput:
            parsed = [BadRecord(1, "unreadable")]
        cfg = Config(db=str(Path(tmp) / "m.db"), embedding=EmbeddingConfig(provider="none"))
        with Memory(cfg) as mem:
            try:
                report = mem.ingest([str(path)], fmt=fmt)
            except InvalidInput as exc:
                assert any(isinstance(r, BadRecord) for r in parsed)
                assert all(p.startswith(f"{path}:") for p in exc.problems)
                assert mem.store.count_nodes("default") == {}
                assert mem.store.sources("default") == []
                return
            good = [r for r in parsed if isinstance(r, Episode)]
            assert len(good) == len(parsed)
            assert report.new + report.skipped == len(good)
            stored = sorted(n.text for n in mem.store.iter_nodes("default", "episode"))
            assert len(stored) == report.new
            assert set(stored) <= {e.text for e in good}


# `--skip-invalid` skips what cannot be read, a line that is not UTF-8 included, and
# stores the rest; without it the error names the line and both ways forward.


def cli_for(tmp_path: Path) -> Memcli:
    return Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")


def test_a_latin1_line_of_jsonl_is_skipped_and_the_rest_stored(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    lines = [json.dumps({"text": "first"}).encode(), '{"text": "café"}'.encode("latin-1")]
    path.write_bytes(b"\n".join([*lines, json.dumps({"text": "third"}).encode()]) + b"\n")
    cli = cli_for(tmp_path)
    refused = cli("ingest", path)
    assert refused.exit_code == 4
    assert f"{path}:2: not UTF-8 text (byte 0xe9 at column 14)" in refused.stderr
    assert f"iconv -f latin1 -t utf-8 {path}" in refused.stderr
    assert "--skip-invalid" in refused.stderr
    [report] = cli.json("ingest", "--skip-invalid", path)
    assert (report["new"], report["invalid"]) == (2, 1)
    texts = {r["text"] for r in cli.json("list")}
    assert texts == {"first", "third"}


def test_a_latin1_line_of_a_transcript_spoils_only_its_turn(tmp_path: Path) -> None:
    path = tmp_path / "talk.txt"
    path.write_bytes(
        b"Ann: the plan is set\nBen: see you at the\n"
        + "caf\xe9 at noon\n".encode("latin-1")
        + b"Ann: great\n"
    )
    cli = cli_for(tmp_path)
    assert cli("ingest", path).exit_code == 4
    [report] = cli.json("ingest", "--skip-invalid", path)
    assert (report["new"], report["invalid"]) == (2, 1)
    assert {r["text"] for r in cli.json("list")} == {"the plan is set", "great"}


# Invalid JSON is reported in one readable phrase: json's own "starting at" messages get
# no second "at".


def test_an_unterminated_string_names_its_column_once() -> None:
    assert load_document('{"text": "never closed}') == BadRecord(
        1, "invalid JSON: Unterminated string starting at column 10"
    )


def test_other_messages_keep_their_at() -> None:
    assert load_document('{"a": 1,}') == BadRecord(
        1, "invalid JSON: Expecting property name enclosed in double quotes at column 9"
    )
