"""`list --json`: the records on stdout, and where the page sits (total, paging, or that no
memory matches) as one JSON object on stderr instead of a line of text."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_runner import Memcli
from tests.paths import EXAMPLE
from tests.reliability import write_config


def test_paging_and_no_match_are_json(tmp_path: Path) -> None:
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    cli.ok("ingest", EXAMPLE)
    page = cli.ok("--json", "list", "--limit", "5", "--offset", "5")
    records = [json.loads(line) for line in page.stdout.splitlines()]
    assert len(records) == 5 and all("node_id" in r for r in records)
    note = json.loads(page.stderr)
    assert (note["total"], note["offset"], note["limit"], note["count"]) == (16, 5, 5, 5)
    assert note["next_offset"] == 10 and note["note"].startswith("6-10 of 16")
    empty = cli.ok("--json", "list", "--grep", "no such words anywhere")
    assert empty.stdout == ""
    nothing = json.loads(empty.stderr)
    assert (nothing["total"], nothing["count"], nothing["note"]) == (0, 0, "no memories match")
    unknown = json.loads(cli.ok("--json", "list", "--session", "nope").stderr)
    assert unknown["unknown_sessions"] == ["nope"] and "sessions include" in unknown["note"]
    assert cli.ok("--json", "-q", "list", "--grep", "zzz").stderr == ""
    text = cli.ok("list", "--grep", "no such words anywhere")
    assert text.stderr.strip() == "no memories match"
