"""`memcli mcp` over stdio: the client's messages capped in size, and SIGTERM heard.

The SDK reads each JSON-RPC message as one line of stdin, however long: a 50 MB line cost
285 MB of memory. Here a relay thread reads the real stdin in chunks and passes each line
on to the SDK through a pipe put in place of fd 0; a line over the limit is dropped as it
is read (only its length is kept) and said on stderr, so memory stays within one limit's
worth. The relay is also how the server stops: SIGTERM, or the client closing stdin, ends
the pipe, and the SDK ends as when a client goes away, without waiting for calls in
flight (memcli.mcp.calls).
"""

from __future__ import annotations

import os
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
        over = 0  # bytes of the current line once it is past the limit (0: it is not)
        while chunk := _read(self._source):
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                stop = len(chunk) if end == -1 else end + 1
                if over or len(line) + stop - start > self.limit:
                    over += len(line) + stop - start
                    line.clear()
                else:
                    line += chunk[start:stop]
                start = stop
                if end == -1:
                    continue
                if over:
                    self._drop(over)
                    over = 0
                elif not self._pass(bytes(line)):
                    return
                line.clear()
        if line:
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

    def _drop(self, size: int) -> None:
        self.dropped += 1
        print(
            f"memcli mcp: warning: dropped a message of {size} bytes from the client, over the "
            f"{self.limit} bytes limit of one line",
            file=sys.stderr,
            flush=True,
        )


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
