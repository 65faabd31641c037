"""A store file with a corrupted page is a database error with the fix (exit 7), not an
internal error asking for a bug report."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli_runner import Memcli
from tests.paths import EXAMPLE
from tests.reliability import write_config

PAGE = 4096


def _schema_pages(db: Path) -> set[int]:
    """The pages of the schema table: page 1 and, when it has outgrown it, page 1's
    children (read from the b-tree header of an interior table page)."""
    first = db.read_bytes()[:PAGE]
    header = first[100:]
    if header[0] != 0x05:  # a leaf: the whole schema is on page 1
        return {1}
    cells = int.from_bytes(header[3:5], "big")
    pointers = [int.from_bytes(header[12 + 2 * i : 14 + 2 * i], "big") for i in range(cells)]
    children = {int.from_bytes(first[p : p + 4], "big") for p in pointers}
    return {1, int.from_bytes(header[8:12], "big"), *children}


def test_a_corrupted_page_exits_7_with_the_fix(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    cli = Memcli(config=write_config(tmp_path), db=db)
    cli.ok("ingest", EXAMPLE)
    cli.ok("inspect")  # checkpointed: the pages are in the file
    size = db.stat().st_size
    schema = _schema_pages(db)
    with db.open("r+b") as file:  # every page but the schema's, which stays readable
        for page in range(3, size // PAGE):
            if page + 1 not in schema:  # SQLite numbers pages from 1
                file.seek(page * PAGE + 100)
                file.write(os.urandom(400))
    for command in (["inspect"], ["list"]):
        result = cli(*command)
        assert result.exit_code == 7, (command, result.stderr)
        assert "the store file is damaged (database disk image is malformed)" in result.stderr
        assert "fix: restore it from a backup" in result.stderr
        # SQLite 3.40 (Debian 12's sqlite3) reports healthy memcli stores as damaged
        assert "`memcli doctor` shows what is damaged" in result.stderr
        assert "sqlite3 FILE" not in result.stderr
        assert "internal error" not in result.stderr and "report it" not in result.stderr
    as_json = json.loads(cli("--json", "inspect").stderr)
    assert as_json["exit"] == 7 and "damaged" in as_json["error"]
