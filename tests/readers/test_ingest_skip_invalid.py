"""`--skip-invalid` skips what cannot be read, a line that is not UTF-8 included, and
stores the rest; without it the error names the line and both ways forward."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_runner import Memcli
from tests.reliability import write_config


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
