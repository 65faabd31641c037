"""A config file that holds a secret (`mcp.token`) must be readable by its owner only.

Every other user of the machine can connect to `memcli mcp --http` on 127.0.0.1; the token
is all that keeps them out, so a token in a file they can read keeps no one out. As with
OpenSSH's private keys and libpq's .pgpass, a group or world bit on such a file counts:
every command says so on stderr, and `mcp --http` refuses to serve with that token
(memcli.mcp.access).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

OPEN_BITS = 0o077  # any access for the group or for others


def open_mode(path: Path) -> int | None:
    """The file's permission bits when its group or others may use it, else None (and
    None where POSIX permissions do not apply)."""
    if os.name != "posix":
        return None
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        return None
    return mode if mode & OPEN_BITS else None


def holds_token(file_layer: dict[str, Any]) -> bool:
    """Whether the config file's settings give mcp.token a value."""
    section = file_layer.get("mcp")
    return isinstance(section, dict) and section.get("token") not in (None, "")


def exposure(path: Path | None, file_layer: dict[str, Any]) -> str | None:
    """What is wrong when the config file holds mcp.token and others may read it, with the
    fix; None when nothing is."""
    if path is None or not holds_token(file_layer):
        return None
    mode = open_mode(path)
    if mode is None:
        return None
    return (
        f"{path} holds mcp.token and other users of this machine may read it (mode "
        f"{mode:04o}); fix: chmod 600 {shlex.quote(str(path))} (or move the token to "
        "MEMCLI_MCP_TOKEN)"
    )
