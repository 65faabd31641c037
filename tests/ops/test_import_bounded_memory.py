"""`memcli import` reads a dump line by line: a gzip bomb of blank lines costs no memory,
and a dump of many bad records keeps only the first of its problems, with their count."""

from __future__ import annotations

import gzip
import io
import json
import sys
from pathlib import Path

import pytest

from memcli import Memory
from memcli.errors import InvalidInput
from memcli.readers import read_lines
from tests.cli_runner import REPO, Memcli, clean_env
from tests.paths import EXAMPLE
from tests.peak_memory import run_measured
from tests.reliability import write_config

MB = 1 << 20


def exported(tmp_path: Path) -> list[bytes]:
    """The lines of a dump of the example chat."""
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "source.db")
    cli.ok("ingest", EXAMPLE)
    return cli.ok("export").stdout.encode().splitlines(keepends=True)


def test_a_gzip_bomb_of_blank_lines_is_read_as_it_comes(tmp_path: Path) -> None:
    lines = exported(tmp_path)
    # 256 MiB of newlines between the header and the rest, in 7 KB: gzip members of 1 MiB
    # each, one after the other (a valid gzip file). Read whole, it took over 600 MB.
    blank = gzip.compress(b"\n" * MB)
    bomb = tmp_path / "bomb.jsonl.gz"
    with bomb.open("wb") as out:
        out.write(gzip.compress(lines[0]))
        for _ in range(256):
            out.write(blank)
        out.write(gzip.compress(b"".join(lines[1:])))
    assert bomb.stat().st_size < 2 * MB
    config, db = write_config(tmp_path), tmp_path / "target.db"
    argv = [sys.executable, "-m", "memcli", "--config", str(config), "--db", str(db)]
    run = run_measured([*argv, "import", str(bomb)], env=clean_env(), cwd=REPO, timeout=180)
    assert not run.killed and run.returncode == 0, run
    assert run.peak_mb < 150, run.peak_mb
    [stats] = Memcli(config=config, db=db).json("inspect")
    assert stats["nodes"] == {"episode": 16}


def test_a_dump_of_many_bad_records_reports_the_first_and_counts_all(tmp_path: Path) -> None:
    lines = exported(tmp_path)
    bad = [json.dumps({"record": "node", "id": f"ep{i}"}).encode() + b"\n" for i in range(5000)]
    dump = tmp_path / "bad.jsonl"
    dump.write_bytes(b"".join([lines[0], *bad, *lines[1:]]))
    config, db = write_config(tmp_path), tmp_path / "target.db"
    refused = Memcli(config=config, db=db)("import", dump)
    assert refused.exit_code == 4
    assert f"{dump}:2: node record without 'kind'" in refused.stderr
    assert "... and 4,990 more problems" in refused.stderr
    mem = Memory.open(db, config=config)
    try:
        with pytest.raises(InvalidInput) as info:
            mem.import_dump(dump)
    finally:
        mem.close()
    assert len(info.value.problems) == 1000 and info.value.total == 5000


def test_blank_lines_skipped_in_bulk_keep_the_line_numbers() -> None:
    data = b"\n\n  \t\r\n" + b"\n" * 200_000 + b'  {"a": 1}\n\n{"b": 2}\n \n'
    with read_lines("-", io.BytesIO(data)) as (name, lines):
        assert name == "<stdin>"
        assert list(lines) == [(200_004, b'{"a": 1}'), (200_006, b'{"b": 2}')]
