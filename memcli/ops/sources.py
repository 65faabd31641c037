"""Which ingested files a `--source` names (`prune`, `list`): a path as ingested or as it
is now, a file with the same bytes, or a sha256 prefix."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memcli.errors import NotFound

if TYPE_CHECKING:
    from memcli.store import Store

SHA_PREFIX_MIN = 8


def _file_sha256(path: str) -> str | None:
    """The sha256 of an existing file's bytes (as ingest records it), None when unreadable."""
    if not os.path.isfile(path):
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


# The sha256 of the file a spec names, None when there is none it may read.
Digest = Callable[[str], "str | None"]


def match_sources(
    store: Store, space: str, specs: tuple[str, ...], digest: Digest | None = None
) -> set[int]:
    """Source ids for paths (as stored or absolute), the content of an existing file (so
    any name of the same bytes works; `digest` reads it, by default any file), or sha256
    prefixes; NotFound otherwise."""
    rows = store.sources(space)
    chosen: set[int] = set()
    for spec in specs:
        wanted = spec.strip().lower()
        content = (digest or _file_sha256)(spec)
        hits = [
            r
            for r in rows
            if r["path"] == spec
            or os.path.abspath(r["path"]) == os.path.abspath(spec)
            or r["sha256"] == content
            or (len(wanted) >= SHA_PREFIX_MIN and r["sha256"].startswith(wanted))
        ]
        if len(hits) != 1:
            raise _unmatched_source(spec, hits, rows, space)
        chosen.add(hits[0]["id"])
    return chosen


def _unmatched_source(spec: str, hits: list[Any], rows: list[Any], space: str) -> NotFound:
    """NotFound for a --source naming no source or several, with the candidates."""
    listed = "\n".join(f"  {r['sha256'][:12]}  {r['path']}" for r in (hits or rows)[:10])
    what = "matches several sources" if hits else f"matches no source in space {space!r}"
    fix = "pass the path as ingested, a file with the same content, or a sha256 prefix (8+)"
    if hits:  # e.g. a log ingested again after it grew: every version is a source
        every = " ".join(f"--source {r['sha256'][:SHA_PREFIX_MIN]}" for r in hits[:10])
        fix = f"pass one sha256 prefix, or all of them ({every})"
    return NotFound(
        f"--source {spec!r} {what}" + (f"; candidates:\n{listed}" if listed else ""), fix=fix
    )
