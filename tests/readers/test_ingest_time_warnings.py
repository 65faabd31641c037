"""A time that cannot be read ("2024-02-30") is stored without a time and said, with the
line it is on: a warning on stderr, and `warnings` in the JSON report."""

from __future__ import annotations

import json
from pathlib import Path

from memcli.readers import read_source
from tests.cli_runner import Memcli
from tests.reliability import write_config


def test_an_impossible_date_is_a_warning_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    rows = [
        {"text": "fine", "timestamp": "2024-02-03T10:00:00"},
        {"text": "odd", "timestamp": "2024-02-30"},
        {"text": "odd again", "timestamp": "2024-02-30"},
        {"text": "other", "timestamp": "yesterday-ish"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    result = cli.ok("ingest", path)
    assert result.stdout.startswith("4 new episodes")
    assert result.stderr.splitlines() == [
        f"memcli: warning: {path}:2: cannot read the time '2024-02-30'; stored without a "
        "time (and 1 more turn with it)",
        f"memcli: warning: {path}:4: cannot read the time 'yesterday-ish'; stored without a time",
    ]
    again = cli("--json", "-q", "ingest", path)
    report = json.loads(again.stdout)
    assert len(report["warnings"]) == 2 and again.stderr == ""


def test_transcript_session_dates_warn_too(tmp_path: Path) -> None:
    path = tmp_path / "talk.txt"
    path.write_text("--- 2023-13-45\nAnn: hi\nBen: hello\n--- 2023-05-01\nAnn: later\n")
    source = read_source(str(path))
    assert source.warnings == [
        f"{path}:2: cannot read the time '2023-13-45'; stored without a time "
        "(and 1 more turn with it)"
    ]


def test_readable_times_warn_about_nothing(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"text": "x", "timestamp": 1700000000}) + "\n")
    assert read_source(str(path)).warnings == []
