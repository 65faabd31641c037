"""A loopback static file server for the model-download tests, with faults on demand.

with FileServer({"/org/m/resolve/rev/a.json": b"{}"}) as server:
    server.cut_after = 10   # send a full Content-Length, then hang up after 10 bytes
    ... download from server.url ...
    assert server.requests == ["/org/m/resolve/rev/a.json"]
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class FileServer:
    """Serves `files` (URL path -> bytes or a file on disk) on 127.0.0.1 in a thread."""

    def __init__(self, files: dict[str, bytes | Path]) -> None:
        self.files = files
        self.requests: list[str] = []
        self.cut_after: int | None = None  # bytes sent before the connection is dropped
        self.corrupt = False  # flip the first byte of every body
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                body = outer.body(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if outer.cut_after is not None:
                    self.wfile.write(body[: outer.cut_after])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def body(self, path: str) -> bytes | None:
        """What a GET of `path` returns, with the corruption switch applied."""
        found = self.files.get(path)
        if found is None:
            return None
        data = found.read_bytes() if isinstance(found, Path) else found
        if self.corrupt and data:
            data = bytes([data[0] ^ 0xFF]) + data[1:]
        return data

    def __enter__(self) -> FileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
