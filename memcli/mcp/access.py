"""Who may use the memory through `memcli mcp`, and for what.

Over stdio the client is the process that started the server; over HTTP any local process
or user can connect, so there every request carries a bearer token, the `ingest` tool
reads only from directories the owner listed, and clients can be held to some spaces.
Forgetting a whole space needs the server's own consent (`--allow-forget-all`), never a
flag the client sets. No third-party imports: the ASGI check is plain ASGI.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from memcli.config import Config
from memcli.errors import ConfigError, NotFound, UsageError
from memcli.mcp.files import file_digest, open_regular

MIN_TOKEN_CHARS = 16
TOKEN_ENV = "MEMCLI_MCP_TOKEN"
_RESTART = "and restart `memcli mcp`"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class Access:
    """What clients of one server may do."""

    ingest_dirs: tuple[Path, ...] | None  # None: any file the server's user can read
    spaces: frozenset[str] | None  # None: any space
    forget_all: bool  # forget may select every memory of a space

    @classmethod
    def for_server(cls, cfg: Config, *, http: bool, forget_all: bool = False) -> Access:
        """The rules for a server over stdio or HTTP, from `mcp.*` settings and flags."""
        dirs = cfg.mcp.ingest_dirs
        allowed: tuple[Path, ...] | None
        if dirs is None:
            allowed = () if http else None
        else:
            allowed = tuple(Path(os.path.realpath(Path(d).expanduser())) for d in dirs)
        spaces = None if cfg.mcp.spaces is None else frozenset([*cfg.mcp.spaces, cfg.space])
        return cls(allowed, spaces, forget_all or cfg.mcp.allow_forget_all)

    def check_space(self, space: str) -> None:
        """UsageError for a space clients of this server may not use."""
        if self.spaces is not None and space not in self.spaces:
            raise UsageError(
                f"space {space!r} is not open to clients of this server",
                fix=f"use one of: {', '.join(sorted(self.spaces))} (the server's mcp.spaces); "
                f"the owner can add it to mcp.spaces {_RESTART}",
            )

    def _allows(self, real: Path) -> bool:
        return self.ingest_dirs is None or any(
            real == d or d in real.parents for d in self.ingest_dirs
        )

    def check_ingest(self, path: str) -> str:
        """The real path of a file the ingest tool may read; UsageError for any other."""
        real = _resolved(path)
        if self._allows(real):
            return str(real)
        where = ", ".join(map(str, self.ingest_dirs or ())) or "none (the default over --http)"
        raise UsageError(
            f"the ingest tool may not read {path}: it is outside the directories this "
            f"server allows ({where})",
            fix="the owner can list the directory in mcp.ingest_dirs of memcli's config "
            f"{_RESTART}, or ingest the file from a shell with `memcli ingest PATH`",
        )

    def open_ingest(self, real: str) -> BinaryIO:
        """The file at `real` (as check_ingest returned it) opened for the ingest tool:
        a regular file, reached through no link swapped in since the check, its reads
        timed (memcli.mcp.files)."""
        opened: BinaryIO = open_regular(real, real, within=self.ingest_dirs is not None)
        return opened

    def source_digest(self, spec: str) -> str | None:
        """The sha256 of the file a `forget` source names, read only when clients may
        ingest it: otherwise a client could test any file's content against the sources."""
        try:
            real = _resolved(spec)
        except NotFound:
            return None
        if not self._allows(real):
            return None
        return file_digest(str(real), within=self.ingest_dirs is not None)

    def check_forget(self, removes: int, held: int) -> None:
        """UsageError when a forget would take every memory of a space and the server was
        not started to allow that."""
        if self.forget_all or held <= 1 or removes < held:
            return
        raise UsageError(
            f"this would forget all {held} turns of the space, which clients of this server "
            "may not do",
            fix="name the sessions, sources or nodes to forget, or run `memcli prune` in a "
            f"shell; the owner can allow it with `memcli mcp --allow-forget-all` (or "
            f"mcp.allow_forget_all: true) {_RESTART}",
        )


def _resolved(path: str) -> Path:
    """`path` made absolute with no symbolic link left in it; NotFound when a component
    changes while it is looked at (Python 3.11's realpath then raises ENOENT or EINVAL)."""
    try:
        return Path(os.path.realpath(Path(path).expanduser()))
    except OSError as exc:
        raise NotFound(
            f"{path}: the path changed while it was checked ({exc.strerror or exc}); "
            "nothing was read",
            fix="call the tool again once the directory stays put",
        ) from None


def server_token(cfg: Config) -> tuple[str, bool]:
    """The bearer token HTTP clients must send, and whether it was made just now (it is
    then printed at start); a configured one must be long enough to resist guessing."""
    token = cfg.mcp.token
    if token is None:
        return secrets.token_urlsafe(32), True
    _refuse_a_token_others_read(cfg)
    if len(token.strip()) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"mcp.token is {len(token.strip())} characters; it needs at least {MIN_TOKEN_CHARS}",
            fix="make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'` "
            f"and set it in {TOKEN_ENV} (or mcp.token), or unset it for a new one per start",
        )
    return token.strip(), False


def _refuse_a_token_others_read(cfg: Config) -> None:
    """ConfigError when the token in use comes from a config file other users may read:
    it would keep none of them out (memcli.config.secrecy)."""
    from memcli.config.load import read_yaml
    from memcli.config.secrecy import exposure

    if cfg.source_file is None:
        return
    path = Path(cfg.source_file)
    layer = read_yaml(path)
    if str((layer.get("mcp") or {}).get("token")) != cfg.mcp.token:
        return  # MEMCLI_MCP_TOKEN set another one: that is the token in use
    problem = exposure(path, layer)
    if problem is not None:
        what, _, fix = problem.partition("; fix: ")
        raise ConfigError(
            f"will not serve over HTTP with a token anyone on this machine may read: {what}",
            fix=fix,
        )


class BearerAuth:
    """ASGI middleware: an HTTP request without `Authorization: Bearer <token>` gets 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {
                "error": "unauthorized: this memcli server needs the bearer token printed "
                "when it started",
                "fix": f"send the header 'Authorization: Bearer TOKEN' (fixed by {TOKEN_ENV})",
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"www-authenticate", b'Bearer realm="memcli"'),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    given.strip(), self._token
                )
        return False
