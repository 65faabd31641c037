"""The MCP ingest tool reads like `memcli ingest`: endless input is refused with bounded
memory (a device such as /dev/zero before a byte is read: the tool reads regular files
only), and the server goes on serving."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_runner import REPO, clean_env
from tests.fakeserver import FakeModelServer
from tests.mcp.test_mcp import call, error_of, free_port, write_config
from tests.mcp.test_mcp_http_access import TOKEN, client
from tests.peak_memory import KIB_PER_MB, vm_hwm_kb

LIMIT_MB = 200


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_ingest_tool_on_endless_input(tmp_path: Path, fake_server: FakeModelServer) -> None:
    config = write_config(tmp_path, fake_server)
    big = tmp_path / "one-line.jsonl"
    big.write_bytes(b"x" * (150 << 20))
    config.write_text(config.read_text() + f"mcp:\n  ingest_dirs: [/dev, {tmp_path}]\n")
    port = free_port()
    argv = [sys.executable, "-m", "memcli", "--config", str(config), "mcp", "--http"]
    env = clean_env(MEMCLI_MCP_TOKEN=TOKEN)
    server = subprocess.Popen([*argv, "--port", str(port)], env=env, cwd=REPO)

    async def scenario() -> None:
        async with client(f"http://127.0.0.1:{port}/mcp") as session:
            await call(session, "remember", text="warm")  # everything loaded before measuring
            message = await error_of(session, "ingest", path="/dev/zero", format="jsonl")
            assert "/dev/zero: a character device, not a regular file" in message
            message = await error_of(session, "ingest", path=str(big))
            assert "record is 157286400 bytes, over the 1 MiB limit" in message
            assert (await call(session, "stats"))["nodes"]["episode"] == 1

    try:
        for _ in range(300):  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        asyncio.run(scenario())
        peak_mb = vm_hwm_kb(server.pid) / KIB_PER_MB
    finally:
        server.terminate()
        server.wait(30)
    assert 0 < peak_mb < LIMIT_MB, peak_mb
