"""A store file with a corrupted page is a database error with the fix (exit 7), not an
internal error asking for a bug report."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli_runner import Memcli
from tests.reliability import write_config

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat.jsonl"
PAGE = 4096


def test_a_corrupted_page_exits_7_with_the_fix(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    cli = Memcli(config=write_config(tmp_path), db=db)
    cli.ok("ingest", EXAMPLE)
    cli.ok("inspect")  # checkpointed: the pages are in the file
    size = db.stat().st_size
    with db.open("r+b") as file:  # every page but the first few: the schema stays readable
        for page in range(3, size // PAGE):
            file.seek(page * PAGE + 100)
            file.write(os.urandom(400))
    for command in (["inspect"], ["list"]):
        result = cli(*command)
        assert result.exit_code == 7, (command, result.stderr)
        assert "the store file is damaged (database disk image is malformed)" in result.stderr
        assert "fix: restore it from a backup" in result.stderr
        assert "internal error" not in result.stderr and "report it" not in result.stderr
    as_json = json.loads(cli("--json", "inspect").stderr)
    assert as_json["exit"] == 7 and "damaged" in as_json["error"]
