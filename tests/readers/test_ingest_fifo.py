"""`memcli ingest` reads a named pipe, as a shell's `<(...)` gives it one: the MCP server
refuses FIFOs (tests/mcp/test_mcp_hostile.py), the command line keeps reading them."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from tests.cli_runner import Memcli
from tests.paths import EXAMPLE
from tests.readers.test_ingest_export_zip import DATA, export_zip
from tests.reliability import write_config


def feed(fifo: Path, data: bytes) -> threading.Thread:
    """A writer that opens the FIFO (waiting for its reader) and writes `data` into it."""

    def write() -> None:
        with open(fifo, "wb") as pipe:
            pipe.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def test_a_fifo_is_read_to_its_end(tmp_path: Path) -> None:
    fifo = tmp_path / "chat.jsonl"
    os.mkfifo(fifo)
    writer = feed(fifo, EXAMPLE.read_bytes())
    [report] = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db").json("ingest", fifo)
    writer.join(30)
    assert report["new"] == 16


def test_an_export_zip_through_a_fifo(tmp_path: Path) -> None:
    # A zip's index is at its end: a pipe cannot seek back to it, so it is read first.
    packed = export_zip(tmp_path / "export.zip", DATA / "chatgpt-conversations.json")
    fifo = tmp_path / "export-pipe"
    os.mkfifo(fifo)
    writer = feed(fifo, packed.read_bytes())
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "m.db")
    [report] = cli.json("ingest", fifo)
    writer.join(30)
    assert report["new"] > 0
    [again] = cli.json("ingest", DATA / "chatgpt-conversations.json")
    assert again["new"] == 0  # the same conversations
