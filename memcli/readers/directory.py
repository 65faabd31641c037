"""What to pass instead of a directory: the conversation files it holds, named or matched.

`memcli ingest DIR` reads files, not directories. The fix names what is there: the
conversations.json of an unzipped ChatGPT or Claude export, else the files memcli reads
grouped by suffix (`DIR/*.jsonl`), each ready to paste into a shell.
"""

from __future__ import annotations

import os
import shlex
from itertools import islice

from memcli.readers import chat, chatgpt, claude, jsonl, locomo, transcript

EXPORT_MEMBER = "conversations.json"  # what an unzipped ChatGPT or Claude export holds
_LOOKED_AT = 10_000  # entries read at most: a huge directory costs no more than this
_SHOWN = 3  # names or patterns suggested at most

_SUFFIXES = sorted(
    {s for mod in (jsonl, chat, locomo, chatgpt, claude, transcript) for s in mod.SUFFIXES}
    | {".zip"}  # a chat export's archive
)


def _readable_suffix(name: str) -> str | None:
    """The suffix by which memcli would read a file of this name (`.json.gz` too), or None."""
    lower = name.lower()
    plain = lower.removesuffix(".gz")
    for suffix in _SUFFIXES:
        if plain.endswith(suffix) and len(plain) > len(suffix):
            return suffix + lower[len(plain) :]
    return None


def _file_names(path: str) -> list[str]:
    """Names of the regular files directly in `path` (none when it cannot be listed)."""
    try:
        with os.scandir(path) as entries:
            return sorted(
                e.name for e in islice(entries, _LOOKED_AT) if e.is_file(follow_symlinks=True)
            )
    except OSError:
        return []


def directory_fix(path: str) -> str:
    """The fix for `memcli ingest` given the directory `path`."""
    names = _file_names(path)
    where = shlex.quote(path.rstrip("/") or "/")
    if EXPORT_MEMBER in names:
        return (
            f"it holds {EXPORT_MEMBER}, the conversations of a ChatGPT or Claude export: "
            f"memcli ingest {where}/{EXPORT_MEMBER}"
        )
    groups: dict[str, list[str]] = {}
    for name in names:
        suffix = _readable_suffix(name)
        if suffix is not None:
            groups.setdefault(suffix, []).append(name)
    if not groups:
        return (
            "pass the conversation files themselves; it holds no file memcli reads "
            f"({', '.join(_SUFFIXES)}, compressed with gzip or not)"
        )
    largest = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))[:_SHOWN]
    shown = [
        f"{where}/*{suffix}" if len(found) > 1 else f"{where}/{shlex.quote(found[0])}"
        for suffix, found in largest
    ]
    return f"pass the files inside it: memcli ingest {' '.join(shown)}"
