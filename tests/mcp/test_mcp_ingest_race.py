"""The MCP ingest tool opens what it checked: a directory inside `mcp.ingest_dirs` flipped
to a symbolic link to the outside, again and again while the server ingests, lets no byte
of the outside in. And `forget` by source reads no file outside those directories."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

from mcp.server.mcpserver.exceptions import ToolError

from memcli.config import load_config
from memcli.mcp.access import Access
from memcli.mcp.server import Pool, build_server
from tests.fakeserver import FakeModelServer
from tests.mcp.test_mcp import call, error_of, served, write_config

STRESS_SECONDS = 6.0
INSIDE = '{"session": "s", "speaker": "Ann", "text": "An allowed turn about the garden."}\n'
OUTSIDE = '{"session": "s", "speaker": "Ann", "text": "OUTSIDE SECRET hunter2"}\n'


def _flip(inbox: Path, stop: threading.Event, flips: list[int]) -> None:
    """Make inbox/sub the real directory, then a link to the outside one, until stopped."""
    sub, real, link = inbox / "sub", inbox / ".sub-real", inbox / ".sub-link"
    while not stop.is_set():
        for spare in (real, link):
            os.rename(spare, sub)
            os.rename(sub, spare)
        flips[0] += 1


def test_a_directory_flipped_to_a_link_lets_no_outside_byte_in(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    inbox, outside = tmp_path / "inbox", tmp_path / "outside"
    (inbox / ".sub-real").mkdir(parents=True)
    (inbox / ".sub-real" / "chat.jsonl").write_text(INSIDE)
    outside.mkdir()
    (outside / "chat.jsonl").write_text(OUTSIDE)
    (inbox / ".sub-link").symlink_to(outside)
    cfg = dataclasses.replace(
        load_config(str(write_config(tmp_path, fake_server))), db=str(tmp_path / "memory.db")
    )
    access = dataclasses.replace(Access.for_server(cfg, http=True), ingest_dirs=(inbox,))
    pool = Pool(cfg, access)
    server = build_server(pool)
    outcomes = {"stored": 0, "refused": 0}

    async def ingest_again_and_again() -> None:
        deadline = time.monotonic() + STRESS_SECONDS
        while time.monotonic() < deadline:
            try:
                await server.call_tool("ingest", {"path": str(inbox / "sub" / "chat.jsonl")})
            except ToolError as exc:
                outcomes["refused"] += 1
                assert "internal error" not in str(exc), exc  # a memcli error, with a fix
            else:
                outcomes["stored"] += 1

    stop, flips = threading.Event(), [0]
    flipper = threading.Thread(target=_flip, args=(inbox, stop, flips), daemon=True)
    flipper.start()
    try:
        asyncio.run(ingest_again_and_again())
    finally:
        stop.set()
        flipper.join(10)
        pool.close()
    with contextlib.closing(sqlite3.connect(tmp_path / "memory.db")) as db:
        texts = [row[0] for row in db.execute("SELECT text FROM nodes")]
    assert not any("SECRET" in t for t in texts), (texts, outcomes)
    assert texts == ["An allowed turn about the garden."], texts
    # The race was run: both ways of the directory were met, many times over.
    assert outcomes["stored"] > 20 and outcomes["refused"] > 20, outcomes
    assert flips[0] > 100, flips


def test_forget_by_source_reads_no_file_outside_the_allowed_directories(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    chat = inbox / "chat.jsonl"
    chat.write_text(INSIDE)
    copy_inside, copy_outside = inbox / "same.jsonl", tmp_path / "same-outside.jsonl"
    shutil.copy(chat, copy_inside)
    shutil.copy(chat, copy_outside)  # the same bytes: matching it would tell a client so
    config = write_config(tmp_path, fake_server)
    config.write_text(config.read_text() + f"mcp:\n  ingest_dirs: [{inbox}]\n")

    async def scenario() -> None:
        async with served(config) as client:
            await call(client, "ingest", path=str(chat))
            inside = await call(client, "forget", sources=[str(copy_inside)])
            assert inside["removed"] == {"episode": 1}  # matched by its content
            refused = await error_of(client, "forget", sources=[str(copy_outside)])
            assert "matches no source" in refused
            by_path = await call(client, "forget", sources=[str(chat)])
            assert by_path["removed"] == {"episode": 1}

    asyncio.run(scenario())
