"""Starting `memcli ui`: open the store read-only, bind the loopback port, then serve."""

from __future__ import annotations

import secrets
import socket
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memcli.errors import ConfigError

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.memory import Memory

HOST = "127.0.0.1"


@dataclass
class UiServer:
    """A store opened for reading and a loopback socket listening, not yet served."""

    mem: Memory
    sock: socket.socket
    token: str

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    @property
    def url(self) -> str:
        """The address to open: it carries the token (the first visit sets a cookie)."""
        return f"http://{HOST}:{self.port}/?token={self.token}"

    def serve(self, open_browser: bool = False) -> None:
        """Warm up, open the browser if asked, and answer requests until interrupted."""
        import uvicorn

        from memcli.ui.app import build_app

        if open_browser:
            import webbrowser

            threading.Thread(target=webbrowser.open, args=(self.url,), daemon=True).start()
        try:
            self.mem.warm_up()  # the listening socket queues the browser's first request
            app = build_app(self.mem, self.token, self.port)
            config = uvicorn.Config(app, log_level="warning", server_header=False)
            uvicorn.Server(config).run(sockets=[self.sock])
        finally:
            self.sock.close()
            self.mem.close()


def open_memory(cfg: Config) -> Memory:
    """The configured store and space, read-only: NotFound when there is no store."""
    from memcli.memory import Memory
    from memcli.store import open_store

    store = open_store(cfg.db_path, read_only=True)
    mem = Memory(cfg, store, create=False)
    try:
        mem.require_space("--space")
    except BaseException:
        mem.close()
        raise
    return mem


def prepare(cfg: Config, port: int) -> UiServer:
    """Open the store read-only and listen on 127.0.0.1:`port` (0: any free port)."""
    mem = open_memory(cfg)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: a response goes out as headers, then body, and
        # with Nagle's algorithm on, the body waited ~40 ms for the client's delayed ACK.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((HOST, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        mem.close()
        raise ConfigError(
            f"cannot serve on {HOST}:{port}: {exc.strerror or exc}",
            fix="pass another --port (or --port 0 for any free one), or stop the program "
            "that listens on this one",
        ) from None
    return UiServer(mem, sock, secrets.token_urlsafe(24))
