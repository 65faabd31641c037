"""`memcli mcp`: the memory as a Model Context Protocol server, on the official `mcp` SDK.

One process keeps the store open and the embedding model and the vectors warm, so a recall
costs milliseconds instead of a process start. Every tool is a thin layer over one
`memcli.Memory` method and returns the JSON that `memcli --json` prints for the same work.
A memcli error becomes a tool error whose text is the message and its fix.

Calls run on threads of their own (memcli.mcp.calls, which also maps errors); each call in
flight borrows its own Memory (its own SQLite connection) from a pool, and all of them share
the one embedder and the one in-process vector index. Writers elsewhere (a `memcli
consolidate` from cron) are seen on the next call: SQLite's WAL keeps reads going while
they write. Over stdio, memcli.mcp.stdio caps the client's lines and hears SIGTERM.

This package is the only place that imports `mcp`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from pydantic import Field

from memcli.config import Config
from memcli.errors import ConfigError, LLMNotConfigured, UsageError
from memcli.mcp.access import Access, BearerAuth
from memcli.mcp.calls import Calls
from memcli.mcp.stdio import line_limit, serve_stdio
from memcli.memory import Memory
from memcli.ops.prune import Selection
from memcli.present.inspect import provenance

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("memcli.mcp")

HTTP_HOST = "127.0.0.1"  # streamable HTTP is for this machine's clients only
HTTP_PATH = "/mcp"
SHUTDOWN_GRACE = 3  # seconds calls in flight get to end when an HTTP server is stopped

INSTRUCTIONS = (
    "Long-term memory in one local SQLite file. Call `recall` with the user's question "
    "before answering anything that may depend on earlier conversations; cite the node ids "
    "(ep12, fa3) it returns. Store what is worth keeping with `remember`. `forget` only "
    "reports what it would remove unless called with confirm=true."
)

NO_LLM_FIX = (
    "call the `recall` tool and answer from its context yourself, or give memcli an LLM "
    "(llm.provider and llm.model in its config, or MEMCLI_LLM_PROVIDER/MEMCLI_LLM_MODEL in "
    "the server's environment) and restart the server"
)

Space = Annotated[str | None, Field(description="Memory space (default: the server's).")]
K = Annotated[
    int | None,
    Field(
        ge=1, le=200, description="Hits to return (default: retrieval.k of the server's config)."
    ),
]
Strategy = Annotated[
    str | None,
    Field(
        description="hybrid (default), dwpr, gam, lexical, semantic, or the entity-graph "
        "traversals beam, watercircles and astar."
    ),
]


class Pool:
    """Memories over one store file, one per call in flight, sharing the warm models."""

    def __init__(self, cfg: Config, access: Access | None = None) -> None:
        self.cfg = cfg
        self.access = access or Access.for_server(cfg, http=False)
        first = Memory(cfg)
        try:
            first.warm_up()
        except BaseException:
            first.close(failed=True)
            raise
        self._embedder = first.load_embedder()
        self._idle = [first]
        self._lock = threading.Lock()

    def _new(self) -> Memory:
        mem = Memory(self.cfg, embedder=self._embedder)
        mem.store.use_vector_index()  # the process's index: already loaded, shared
        mem.store.use_read_cache()
        return mem

    @contextmanager
    def memory(self, space: str | None = None, create: bool = False) -> Iterator[Memory]:
        """A Memory for one call, in `space` (default: the configured one). Unless the call
        may `create` it, another space the store does not hold is a mistyped name."""
        if space is not None and not space.strip():
            raise UsageError("space must not be empty", fix="leave it out for the default")
        self.access.check_space(self.cfg.space if space is None else space)
        with self._lock:
            mem = self._idle.pop() if self._idle else self._new()
        try:
            if space is None or space == mem.space:
                yield mem
            else:
                cfg = dataclasses.replace(self.cfg, space=space)
                other = Memory(cfg, store=mem.store, embedder=self._embedder)
                if not create:
                    other.require_space("space")
                yield other
        finally:
            with self._lock:
                self._idle.append(mem)

    def close(self) -> None:
        """Close the memories no call holds; one still running (a call abandoned when the
        server stopped) keeps its connection until the process ends."""
        with self._lock:
            for mem in self._idle:
                mem.close()


def build_server(pool: Pool) -> MCPServer:
    """The MCP server: its tools and resources, each a call of one Memory method."""
    from importlib.metadata import version

    server = MCPServer(
        "memcli", version=version("memcli"), instructions=INSTRUCTIONS, log_level="WARNING"
    )
    calls = Calls()
    _add_memory_tools(server, pool, calls)
    _add_ingest_tool(server, pool, calls)
    _add_admin_tools(server, pool, calls)
    _add_resources(server, pool, calls)
    return server


def _add_memory_tools(server: MCPServer, pool: Pool, calls: Calls) -> None:
    @server.tool()
    @calls.tool
    def remember(
        text: str,
        role: str | None = None,
        session: str | None = None,
        time: str | None = None,
        source: str | None = None,
        space: Space = None,
    ) -> dict[str, Any]:
        """Store one memory (a fact, a decision, something the user said). `role`: who said
        it; `time`: when (ISO date, default now); `source`: a name to forget it by later.
        Returns its node id (`forgotten`: true and no id when this memory was forgotten
        before: it is not stored again)."""
        with pool.memory(space, create=True) as mem:
            report = mem.add(text, role=role, session=session, time=time, source=source)
        return report.to_dict()

    @server.tool()
    @calls.tool
    def recall(
        question: str, strategy: Strategy = None, k: K = None, space: Space = None
    ) -> dict[str, Any]:
        """Memories relevant to a question, packed as dated, cited context (`context`),
        with the ranked hits. No LLM is called."""
        with pool.memory(space) as mem:
            return mem.recall(question, strategy=strategy, k=k).to_dict()

    @server.tool()
    @calls.tool
    def answer(
        question: str, strategy: Strategy = None, k: K = None, space: Space = None
    ) -> dict[str, Any]:
        """Answer a question from memory with the LLM configured for memcli, citing node
        ids. Fails when no LLM is configured: use `recall` and answer yourself."""
        with pool.memory(space) as mem:
            try:
                return mem.ask(question, strategy=strategy, k=k).to_dict()
            except LLMNotConfigured as exc:
                raise LLMNotConfigured(exc.message, fix=NO_LLM_FIX) from None


def _add_ingest_tool(server: MCPServer, pool: Pool, calls: Calls) -> None:
    @server.tool()
    @calls.tool
    def ingest(
        path: str, format: str | None = None, skip_invalid: bool = False, space: Space = None
    ) -> dict[str, Any]:
        """Store every turn of a conversation file on this machine (`format`: jsonl, chat,
        locomo, transcript, chatgpt or claude; default: detected). A relative path is from
        the server's directory. Ingesting the same file again adds nothing, and turns
        forgotten before are not stored again (counted in `forgotten`)."""
        if path.strip() == "-":  # the server's stdin is the MCP stream, or a terminal
            raise UsageError(
                "the ingest tool reads a file on the server's machine; '-' (stdin) is not "
                "available over MCP",
                fix="pass the file's path, or store text with the remember tool",
            )
        readable = pool.access.check_ingest(path)
        with pool.memory(space, create=True) as mem:
            report = mem.ingest(
                readable, fmt=format, skip_invalid=skip_invalid, opener=pool.access.open_ingest
            )
        return report.to_dict()


def _add_admin_tools(server: MCPServer, pool: Pool, calls: Calls) -> None:
    @server.tool()
    @calls.tool
    def forget(
        nodes: list[str] | None = None,
        sessions: list[str] | None = None,
        sources: list[str] | None = None,
        confirm: bool = False,
        space: Space = None,
    ) -> dict[str, Any]:
        """Forget memories by node id (ep12), session (glob allowed) or source name, and
        what was derived only from them. Without confirm=true nothing is removed: the
        result says what would be (`dry_run`: true)."""
        selection = Selection(
            sources=tuple(sources or ()), sessions=tuple(sessions or ()), nodes=tuple(nodes or ()),
            file_digest=pool.access.source_digest,
        )  # fmt: skip
        with pool.memory(space) as mem:
            planned = mem.prune(selection, dry_run=True)
            if not confirm:
                return planned.to_dict()
            held = mem.store.count_nodes(mem.space).get("episode", 0)
            pool.access.check_forget(planned.removed.get("episode", 0), held)
            return mem.prune(selection).to_dict()

    @server.tool()
    @calls.tool
    def stats(space: Space = None) -> dict[str, Any]:
        """What the memory holds: nodes by kind, edges by type, sessions, sources, the
        embedding model, file size and consolidation state."""
        with pool.memory(space) as mem:
            return dict(mem.stats())

    @server.tool()
    @calls.tool
    def inspect(node_id: str, space: Space = None) -> dict[str, Any]:
        """One memory by id (ep12, fa3, sg2...): its text, properties, neighbours in the
        graph and where it came from."""
        with pool.memory(space) as mem:
            return dict(mem.node_view(node_id))


def _add_resources(server: MCPServer, pool: Pool, calls: Calls) -> None:
    @server.resource("memcli://node/{node_id}{?space}", mime_type="application/json", name="node")
    @calls.resource
    def node(node_id: str, space: str | None = None) -> str:
        """One node with its neighbours and provenance (as `memcli inspect node`)."""
        with pool.memory(space) as mem:
            return json.dumps(mem.node_view(node_id), ensure_ascii=False)

    @server.resource(
        "memcli://node/{node_id}/provenance{?space}",
        mime_type="application/json",
        name="provenance",
    )
    @calls.resource
    def node_provenance(node_id: str, space: str | None = None) -> str:
        """Where a node came from: source files, the turns behind it, the nodes it rests on."""
        with pool.memory(space) as mem:
            return json.dumps(provenance(dict(mem.node_view(node_id))), ensure_ascii=False)

    def stats_of(space: str | None) -> str:
        with pool.memory(space) as mem:
            return json.dumps(dict(mem.stats()), ensure_ascii=False)

    @server.resource("memcli://stats{?space}", mime_type="application/json", name="space stats")
    @calls.resource
    def space_stats(space: str | None = None) -> str:
        """Counts and settings of a space (as `memcli inspect`)."""
        return stats_of(space)

    @server.resource("memcli://stats", mime_type="application/json", name="stats")
    @calls.resource
    def store_stats() -> str:
        """Counts and settings of the server's space (as `memcli inspect`)."""
        return stats_of(None)


def check_port(port: int) -> None:
    """ConfigError when `port` on HTTP_HOST cannot be listened on (another server has it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((HTTP_HOST, port))
        except OSError as exc:
            raise ConfigError(
                f"cannot serve on {HTTP_HOST}:{port}: {exc.strerror or exc}",
                fix="pass another --port, or stop the program that listens on this one",
            ) from None


def serve(
    cfg: Config,
    *,
    http: bool = False,
    port: int = 8765,
    token: str | None = None,
    allow_forget_all: bool = False,
) -> None:
    """Warm up, then serve over stdio (or streamable HTTP on 127.0.0.1:`port`, every
    request carrying `token`) until the client goes away."""
    if http:
        if not token:
            raise ConfigError("an HTTP server needs a bearer token", fix="see memcli.mcp.access")
        check_port(port)  # before the model loads, and with memcli's own error
    pool = Pool(cfg, Access.for_server(cfg, http=http, forget_all=allow_forget_all))
    try:
        server = build_server(pool)
        if http:
            _serve_http(server, port, token or "")
        else:
            serve_stdio(server, line_limit(cfg.ingest.max_message_bytes))
    finally:
        pool.close()


def _serve_http(server: MCPServer, port: int, token: str) -> None:
    """Streamable HTTP on HTTP_HOST:`port`, behind the bearer-token check."""
    import anyio
    import uvicorn

    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=HTTP_HOST)
    # On SIGTERM, calls still running after the grace are cancelled (memcli.mcp.calls): a
    # call stuck in a read or on a model server no longer holds the server up.
    config = uvicorn.Config(
        BearerAuth(app, token), host=HTTP_HOST, port=port, log_level="warning",
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
    )  # fmt: skip
    logging.getLogger("uvicorn.error").addFilter(_quiet_cancelled)
    anyio.run(uvicorn.Server(config).serve)


def _quiet_cancelled(record: logging.LogRecord) -> bool:
    """Keep uvicorn's log but for the traceback of each call cancelled at shutdown (the
    line saying how many were cancelled stays)."""
    import asyncio

    return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))
