"""How the MCP server runs a tool call or a resource read: on a thread of its own that
cannot keep the process alive, with memcli's errors reported as tool (resource) errors.

The SDK runs a synchronous tool on anyio's worker threads and, when the server stops,
waits for every one of them: a call stuck in a read, or waiting on a slow model server,
kept `memcli mcp` alive after SIGTERM or after its client had gone. Here each call runs on
a daemon thread that the server awaits: when the server stops, the wait is cancelled and
the process exits; a write the call had not committed is rolled back by SQLite, as after a
crash. At most MAX_CALLS run at once, as the SDK allowed; later ones wait for a slot.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from memcli.errors import MemcliError, damaged_store

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("memcli.mcp")

MAX_CALLS = 40


class Calls:
    """The calls of one server: decorators that turn a synchronous tool or resource
    function into one the SDK awaits, run on a daemon thread."""

    def __init__(self, limit: int = MAX_CALLS) -> None:
        self._limit = limit
        self._slots: anyio.CapacityLimiter | None = None  # made in the server's event loop

    def tool(self, fn: F) -> F:
        """`fn` as a tool: memcli errors become tool errors (message and fix), anything
        else an internal error with its traceback on stderr."""

        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except MemcliError as exc:
                raise ToolError(str(exc)) from None
            except Exception as exc:
                damaged = damaged_store(exc)
                if damaged is not None:
                    raise ToolError(str(damaged)) from None
                log.error("%s failed:\n%s", fn.__name__, traceback.format_exc())
                raise ToolError(f"internal error: {type(exc).__name__}: {exc}") from None

        return self._awaited(fn, checked)

    def resource(self, fn: F) -> F:
        """`fn` as a resource: memcli errors become resource errors."""

        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except MemcliError as exc:
                raise ResourceError(str(exc)) from None

        return self._awaited(fn, checked)

    def _awaited(self, fn: F, run: Callable[..., Any]) -> F:
        @functools.wraps(fn)  # the SDK reads the parameters of `fn` through this
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            return await self.run(functools.partial(run, *args, **kwargs), fn.__name__)

        return wrapper  # type: ignore[return-value]

    async def run(self, call: Callable[[], Any], name: str) -> Any:
        """The result of `call` made on a daemon thread (its exception raised here)."""
        if self._slots is None:
            self._slots = anyio.CapacityLimiter(self._limit)
        async with self._slots:
            done = anyio.Event()
            token = anyio.lowlevel.current_token()
            outcome: list[tuple[bool, Any]] = []

            def work() -> None:
                try:
                    outcome.append((True, call()))
                except BaseException as exc:  # handed to the awaiting task
                    outcome.append((False, exc))
                with contextlib.suppress(RuntimeError):  # the server stopped: nobody waits
                    anyio.from_thread.run_sync(done.set, token=token)

            threading.Thread(target=work, name=f"memcli mcp {name}", daemon=True).start()
            await done.wait()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value
