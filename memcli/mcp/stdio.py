"""`memcli mcp` over stdio: the client's messages capped in size, and SIGTERM heard.

The SDK reads each JSON-RPC message as one line of stdin, however long: a 50 MB line cost
285 MB of memory. Here a relay thread reads the real stdin in chunks and passes each line
on to the SDK through a pipe put in place of fd 0; a line over the limit is dropped as it
is read (only its length and its first and last few bytes are kept) and said on stderr, so
memory stays within one limit's worth. When those bytes show the request's id, the client is
answered with an error for it instead of waiting forever: the relay passes the SDK a request
of that id for a method no server has, named after the drop (the error's `data`). The relay
is also how the server stops: SIGTERM, or the client closing stdin, ends
the pipe, and the SDK ends as when a client goes away, without waiting for calls in
flight (memcli.mcp.calls).
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
from typing import TYPE_CHECKING

import anyio

from memcli.errors import Terminated

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

MIN_LINE_LIMIT = 8 << 20  # bytes; room for the longest text `remember` takes, escaped
_CHUNK = 1 << 16
_KEEP = 4096  # bytes kept of each end of a dropped line, where its id may be read
_ID = rb'"id"\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\\n]|\\.){0,256}")'
_ID_AT = re.compile(_ID)
_ID_LAST = re.compile(_ID + rb"\s*\}\s*$")  # the last member of the message
_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')


def line_limit(max_message_bytes: int) -> int:
    """The longest message line taken from a client, for a given `ingest.max_message_bytes`
    (JSON may spell one character of text in up to six bytes)."""
    return max(MIN_LINE_LIMIT, 6 * max_message_bytes + (64 << 10))


class LineRelay:
    """The process's stdin passed on line by line through a pipe that replaces fd 0."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.dropped = 0  # lines over the limit, not passed on
        self._lock = threading.Lock()
        self._write: int | None = None
        self._source = -1

    def __enter__(self) -> LineRelay:
        self._source = os.dup(0)  # the client's stream; left open for the relay thread
        read, self._write = os.pipe()
        os.dup2(read, 0)
        os.close(read)
        threading.Thread(target=self._relay, name="memcli mcp stdin", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        os.dup2(self._source, 0)

    def stop(self) -> None:
        """End the stream the SDK reads, as if the client had closed stdin."""
        with self._lock:
            if self._write is not None:
                os.close(self._write)
                self._write = None

    def _relay(self) -> None:
        line = bytearray()
        big: _Oversized | None = None  # the current line once it is past the limit
        while chunk := _read(self._source):
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                stop = len(chunk) if end == -1 else end + 1
                piece = chunk[start:stop]
                if big is None and len(line) + len(piece) > self.limit:
                    big = _Oversized(line)
                    line.clear()
                if big is None:
                    line += piece
                else:
                    big.add(piece)
                start = stop
                if end == -1:
                    continue
                if big is None:
                    passed = self._pass(bytes(line))
                    line.clear()
                else:
                    passed = self._drop(big)
                    big = None
                if not passed:
                    return
        if big is not None:
            self._drop(big)
        elif line:
            self._pass(bytes(line))
        self.stop()

    def _pass(self, data: bytes) -> bool:
        """Write a whole line into the pipe; False once the pipe is closed."""
        with self._lock:
            if self._write is None:
                return False
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._write, view) :]
            except OSError:  # the SDK stopped reading
                return False
        return True

    def _drop(self, big: _Oversized) -> bool:
        """Say on stderr that a line was dropped, and have its request (when its id shows)
        answered with an error; False once the pipe is closed."""
        self.dropped += 1
        said = (
            f"dropped a message of {big.size} bytes from the client, over the {self.limit} "
            "bytes limit of one line"
        )
        print(f"memcli mcp: warning: {said}", file=sys.stderr, flush=True)
        request_id = big.request_id()
        if request_id is None:
            return True
        stand_in = {"jsonrpc": "2.0", "id": request_id, "method": f"memcli: {said}"}
        return self._pass(json.dumps(stand_in).encode() + b"\n")


class _Oversized:
    """What is kept of a line over the limit: its size and the bytes at either end."""

    def __init__(self, start: bytearray) -> None:
        self.size = len(start)
        self.head = bytes(start[:_KEEP])
        self.tail = bytes(start[-_KEEP:])

    def add(self, data: bytes) -> None:
        """Count the next bytes of the line."""
        self.size += len(data)
        if len(self.head) < _KEEP:
            self.head += data[: _KEEP - len(self.head)]
        self.tail = (self.tail + data)[-_KEEP:]

    def request_id(self) -> int | str | None:
        """The message's id where its first or last bytes show it, else None."""
        return request_id(self.head, self.tail)


def request_id(head: bytes, tail: bytes) -> int | str | None:
    """The top-level "id" of a JSON-RPC message from the first and the last bytes of its
    line: a member of the outermost object in `head`, or the object's last in `tail`."""
    found = _top_level_id(head) or _ID_LAST.search(tail)
    if found is None:
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:  # a string with a bad escape
        return None
    return value if isinstance(value, int | str) else None


def _top_level_id(head: bytes) -> re.Match[bytes] | None:
    depth, at = 0, 0
    while at < len(head):
        char = head[at : at + 1]
        if char == b'"':
            if depth == 1 and (found := _ID_AT.match(head, at)):
                return found
            string = _STRING.match(head, at)
            if string is None:  # cut off by the end of `head`
                return None
            at = string.end()
            continue
        if char in (b"{", b"["):
            depth += 1
        elif char in (b"}", b"]"):
            depth -= 1
        at += 1
    return None


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, _CHUNK)
    except OSError:
        return b""


def serve_stdio(server: MCPServer, limit: int) -> None:
    """Serve over stdio until the client closes stdin; Terminated after a SIGTERM."""
    terminated = threading.Event()
    with LineRelay(limit) as relay:

        async def run() -> None:
            async with anyio.create_task_group() as group:
                group.start_soon(_stop_on_sigterm, relay, terminated)
                await server.run_stdio_async()
                group.cancel_scope.cancel()

        anyio.run(run)
    if terminated.is_set():
        raise Terminated()


async def _stop_on_sigterm(relay: LineRelay, terminated: threading.Event) -> None:
    try:
        with anyio.open_signal_receiver(signal.SIGTERM) as signals:
            async for _ in signals:
                terminated.set()
                relay.stop()
                return
    except NotImplementedError:  # no signal handlers in this event loop (Windows)
        return
