"""`memcli mcp` against a hostile or careless client: a FIFO in an allowed directory is
refused at once, SIGTERM stops the server even with calls in flight (over stdio and HTTP),
and a huge message line is dropped as it is read, its request answered with an error. Over
stdio it is spoken to as raw JSON-RPC lines, so the test controls exactly what is in flight."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memcli.mcp.files import ReadStalled, TimedFile
from memcli.mcp.stdio import request_id
from tests.cli_runner import REPO, clean_env
from tests.fakeserver import FakeModelServer
from tests.mcp.test_mcp import call, free_port, write_chat, write_config
from tests.mcp.test_mcp_http_access import TOKEN, client
from tests.peak_memory import KIB_PER_MB, vm_hwm_kb

MB = 1 << 20


class RawServer:
    """A `memcli mcp` process over stdio, spoken to one JSON-RPC line at a time."""

    def __init__(self, config: Path) -> None:
        argv = [sys.executable, "-m", "memcli", "--config", str(config), "mcp"]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=clean_env(), cwd=REPO,
        )  # fmt: skip
        self.stderr = b""
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.replies: dict[int | str, dict[str, Any]] = {}
        self._arrived = threading.Condition()
        threading.Thread(target=self._read_replies, daemon=True).start()
        self.send(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "probe", "version": "0"}}}
        )  # fmt: skip
        self.reply(0, timeout=120)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line

    def _read_replies(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            with self._arrived:
                self.replies[message.get("id", -1)] = message
                self._arrived.notify_all()

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def call(self, request_id: int, tool: str, **arguments: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}})  # fmt: skip

    def reply(self, request_id: int | str, timeout: float = 60) -> dict[str, Any]:
        with self._arrived:
            assert self._arrived.wait_for(lambda: request_id in self.replies, timeout), (
                f"no reply to request {request_id}; stderr: {self.stderr[-2000:]!r}"
            )
            return self.replies[request_id]

    def result(self, request_id: int, timeout: float = 60) -> tuple[bool, str]:
        """(is the call an error, its text)."""
        result = self.reply(request_id, timeout)["result"]
        return bool(result.get("isError")), result["content"][0]["text"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


@pytest.fixture
def allowed(tmp_path: Path, fake_server: FakeModelServer) -> tuple[Path, Path]:
    """A config whose server may ingest only from tmp_path/inbox (chat.jsonl and a FIFO)."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    write_chat(inbox)
    os.mkfifo(inbox / "pipe.jsonl")
    config = write_config(tmp_path, fake_server, llm=True)
    config.write_text(config.read_text() + f"mcp:\n  ingest_dirs: [{inbox}]\n")
    return config, inbox


def test_a_fifo_is_refused_at_once_and_the_server_goes_on(allowed: tuple[Path, Path]) -> None:
    config, inbox = allowed
    server = RawServer(config)
    try:
        for request_id in range(1, 51):  # more than the calls that may run at once
            server.call(request_id, "ingest", path=str(inbox / "pipe.jsonl"))
        for request_id in range(1, 51):
            failed, text = server.result(request_id, timeout=30)
            assert failed and "pipe.jsonl: a FIFO, not a regular file" in text, text
        server.call(60, "ingest", path=str(inbox / "chat.jsonl"))
        failed, text = server.result(60)
        assert not failed and json.loads(text)["new"] == 4
    finally:
        server.stop()


def test_sigterm_stops_the_server_with_calls_in_flight(
    allowed: tuple[Path, Path], fake_server: FakeModelServer
) -> None:
    config, inbox = allowed
    server = RawServer(config)
    try:
        server.call(1, "ingest", path=str(inbox / "chat.jsonl"))
        assert not server.result(1)[0]
        fake_server.delay = 120  # every model call now hangs: the answers stay in flight
        for request_id in range(2, 6):
            server.call(request_id, "answer", question="Which hotel did we book?")
        time.sleep(2)
        assert server.proc.poll() is None and len(server.replies) == 2  # nothing answered
        asked = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        code = server.proc.wait(20)
        assert code == 143 and time.monotonic() - asked < 20
        assert b"terminated (SIGTERM)" in server.stderr
    finally:
        fake_server.delay = 0
        server.stop()


def test_sigterm_stops_an_http_server_with_calls_in_flight(
    allowed: tuple[Path, Path], fake_server: FakeModelServer
) -> None:
    config, _ = allowed
    port = free_port()
    argv = [sys.executable, "-m", "memcli", "--config", str(config), "mcp", "--http"]
    server = subprocess.Popen(
        [*argv, "--port", str(port)], env=clean_env(MEMCLI_MCP_TOKEN=TOKEN), cwd=REPO,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"

    async def ask() -> None:
        async with client(url) as session:
            await session.call_tool("answer", {"question": "Which hotel did we book?"})

    def ask_in_thread() -> None:
        with contextlib.suppress(BaseException):  # the server went away: as the test wants
            asyncio.run(ask())

    try:
        for _ in range(300):  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        asyncio.run(_remember(url))
        fake_server.delay = 120
        for _ in range(3):
            threading.Thread(target=ask_in_thread, daemon=True).start()
        time.sleep(3)
        asked = time.monotonic()
        server.send_signal(signal.SIGTERM)
        assert server.wait(20) == 143 and time.monotonic() - asked < 20
        _, stderr = server.communicate(timeout=10)
        assert b"terminated (SIGTERM)" in stderr and b"Traceback" not in stderr
    finally:
        fake_server.delay = 0
        if server.poll() is None:
            server.kill()
        server.wait(30)


async def _remember(url: str) -> None:
    async with client(url) as session:
        await call(session, "remember", text="We booked the Alfama hotel in Lisbon for May.")


def test_a_client_that_goes_away_ends_the_server_with_calls_in_flight(
    allowed: tuple[Path, Path], fake_server: FakeModelServer
) -> None:
    config, _ = allowed
    server = RawServer(config)
    try:
        fake_server.delay = 120
        server.call(1, "answer", question="Which hotel did we book?")
        time.sleep(1)
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        assert server.proc.wait(20) == 0
    finally:
        fake_server.delay = 0
        server.stop()


def test_a_huge_message_line_is_dropped_as_it_is_read(allowed: tuple[Path, Path]) -> None:
    config, _ = allowed
    server = RawServer(config)
    try:
        server.call(1, "stats")
        server.result(1)
        before = vm_hwm_kb(server.proc.pid) / KIB_PER_MB
        text = "x" * (100 * MB)
        huge = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "remember", "arguments": {"text": text}}}  # fmt: skip
        server.send(json.dumps(huge).encode() + b"\n")
        server.call(3, "stats")  # the next message is served
        failed, stats = server.result(3, timeout=120)
        assert not failed and json.loads(stats)["nodes"] == {}
        peak = vm_hwm_kb(server.proc.pid) / KIB_PER_MB
        assert peak - before < 60, (before, peak)  # not the line's 100 MB, nor copies of it
        error = server.reply(2)["error"]  # answered, not left waiting
        assert "dropped a message of 104857" in error["data"], error
        assert b"dropped a message of 104857" in server.stderr
        # An id after the long text is read from the line's end; with none, nothing answers.
        last = b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "remember", '
        last += b'"arguments": {"text": "' + b"y" * (9 * MB) + b'"}}, "id": "late"}\n'
        server.send(last)
        server.send(b'{"jsonrpc": "2.0", "method": "x", "params": "' + b"z" * (9 * MB) + b'"}\n')
        server.call(4, "stats")
        assert not server.result(4)[0]
        assert "over the 8388608 bytes limit" in server.reply("late")["error"]["data"]
        assert server.stderr.count(b"dropped a message") == 3
        assert set(server.replies) == {0, 1, 2, 3, 4, "late"}
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("head", "tail", "found"),
    [
        (b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"t": "xx', b'x"}}', 7),
        (b'{"params": {"id": 3, "text": "xx', b'xx"}, "id": "a\\"b"}\n', 'a"b'),
        (b'{"params": {"id": 3, "text": "xx', b'xx"}}\n', None),  # only a nested one
        (b'{"method": "id", "x": "\\"id\\": 4", "id": 5.5, "p": "', b'"}', None),
        (b'{"jsonrpc": "2.0", "method": "notifications/x", "params": "', b'"}', None),
    ],
)
def test_the_id_of_a_dropped_message(head: bytes, tail: bytes, found: int | str | None) -> None:
    assert request_id(head, tail) == found


def test_a_read_that_returns_nothing_times_out() -> None:
    read, write = os.pipe()  # nobody writes: a read would wait forever
    stalled = TimedFile(io.FileIO(read, "rb"), "slow.jsonl", timeout=0.3)
    started = time.monotonic()
    with pytest.raises(ReadStalled) as info:
        stalled.read(10)
    assert 0.3 <= time.monotonic() - started < 5
    assert "slow.jsonl: a read returned nothing for 0.3 s" in str(info.value)
    with pytest.raises(ReadStalled):  # and at once from then on
        stalled.read(10)
    stalled.close()
    os.write(write, b"late")  # the helper's read returns; it closes the file
    os.close(write)
    for _ in range(100):
        try:
            os.fstat(read)
        except OSError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the stalled file was never closed")
