"""Built benchmark stores kept on disk, so comparing retrieval does not rebuild them.

Building a conversation's store (ingest, then consolidation) is the slow part of a
benchmark run, and retrieval work never changes it. So a store is built once into a cache
directory and reused while nothing that shapes it has changed. Its key hashes:
- the conversation's input files (what `Conversation.inputs` writes or names) and format;
- the settings that shape a store: embedding, consolidation and the LLM used (if any);
- the code that builds stores: every module of memcli except the ones only reading them
  (retrieval, packing the context, answering, the CLI, the MCP server and the
  presentation), see `BUILD_EXCLUDED`.

A store can also be kept as ingest left it (`consolidate=False`: what a user has before
the first `consolidate`), keyed the same way without the consolidation code and settings.
A consolidated store is built from a copy of that one, so a change to consolidation
alone does not embed the turns again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import memcli
from memcli.config import Config
from memcli.eval.runner import Conversation, memory_for

PACKAGE = Path(memcli.__file__).parent
# Paths under memcli/ whose code runs only after a store is built (or never in a benchmark
# build): changing them leaves every built store valid. Directories end with "/". The eval
# modules that read benchmark files and build stores (runner, locomo, chats) stay hashed.
BUILD_EXCLUDED = (
    "retrieval/", "context/", "cli/", "present/", "eval/bootstrap.py", "eval/variants.py",
    "eval/store_cache.py", "eval/answers.py", "ops/ask.py", "ops/answering.py", "mcp/server.py",
    "mcp/access.py", "__main__.py",
)  # fmt: skip
# ... and, for a store kept as ingest left it, the code that only consolidates.
INGEST_EXCLUDED = ("consolidate/", "ops/consolidate.py")
BUILT = "built.json"


def code_hash(package: Path = PACKAGE, consolidate: bool = True) -> str:
    """sha256 over the path and bytes of every module that builds stores (without the
    consolidation code, for stores kept as ingest left them)."""
    excluded = BUILD_EXCLUDED if consolidate else (*BUILD_EXCLUDED, *INGEST_EXCLUDED)
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith(excluded):
            continue
        digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def settings_identity(cfg: Config, consolidate: bool = True) -> str:
    """The settings that shape a built store, as text."""
    if not consolidate:
        return f"{cfg.embedding!r}|ingest only"
    llm = "none" if cfg.llm.provider == "none" else f"{cfg.llm.provider}:{cfg.llm.model}"
    return f"{cfg.embedding!r}|{cfg.consolidation!r}|{llm}"


def store_key(conv: Conversation, cfg: Config, code: str, consolidate: bool = True) -> str:
    """The cache key of a conversation's built store (the first 20 hex digits)."""
    identity = settings_identity(cfg, consolidate)
    digest = hashlib.sha256(f"{code}|{identity}|{conv.fmt}".encode())
    with tempfile.TemporaryDirectory(prefix="memcli-key-") as scratch:
        for name in conv.inputs(Path(scratch)):
            digest.update(b"\0" + Path(name).read_bytes())
    return digest.hexdigest()[:20]


def built_store(
    conv: Conversation,
    cfg: Config,
    cache: Path,
    shared: dict[str, Any],
    *,
    code: str | None = None,
    rebuild: bool = False,
    consolidate: bool = True,
) -> tuple[Path, dict[str, Any]]:
    """The path of the conversation's consolidated store in `cache` (or, without
    `consolidate`, of its store as ingest left it), built now if missing or if `rebuild`,
    and what building it took (from when it was built)."""
    if consolidate:
        key = store_key(conv, cfg, code or code_hash())
    else:
        key = store_key(conv, cfg, code_hash(consolidate=False), consolidate=False) + "-ingest"
    home = cache / _slug(conv.name) / key
    if rebuild and home.exists():
        shutil.rmtree(home)
    if not (home / BUILT).is_file():
        ingested = None
        if consolidate:  # from a copy of the ingested store, itself built once
            ingested = built_store(conv, cfg, cache, shared, rebuild=rebuild, consolidate=False)
        _build(conv, cfg, home, shared, key, ingested)
    return home / "memory.db", json.loads((home / BUILT).read_text(encoding="utf-8"))


def _build(
    conv: Conversation, cfg: Config, home: Path, shared: dict[str, Any], key: str,
    ingested: tuple[Path, dict[str, Any]] | None,
) -> None:  # fmt: skip
    """Build into a scratch directory beside `home`, then move it into place whole, so an
    interrupted build never leaves a store that looks finished. With `ingested` (a store as
    ingest left it, and its build info), consolidate a copy of it."""
    home.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".building-", dir=home.parent))
    try:
        if ingested is None:
            mem, timing = memory_for(conv, cfg, scratch, shared, consolidate=False)
        else:
            mem, timing = _consolidated_copy(cfg, scratch, shared, *ingested)
        shared.setdefault("embedder", mem.load_embedder())
        mem.close()
        info: dict[str, Any] = {"conversation": conv.name, "key": key}
        info.update({k: round(v, 2) for k, v in timing.items()})
        (scratch / BUILT).write_text(json.dumps(info, indent=1), encoding="utf-8")
        if home.exists():  # built meanwhile by another run: keep that one
            return
        scratch.rename(home)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _consolidated_copy(
    cfg: Config, scratch: Path, shared: dict[str, Any], db: Path, built: dict[str, Any]
) -> tuple[Any, dict[str, float]]:
    """A copy of an ingested store, consolidated as `memory_for` would, and the timings
    (ingest's from when the ingested store was built)."""
    from memcli.memory import Memory

    for suffix in ("", "-wal"):  # a closed store has no -wal; copied if one is left
        if Path(f"{db}{suffix}").is_file():
            shutil.copyfile(f"{db}{suffix}", scratch / f"memory.db{suffix}")
    mem = Memory(dataclasses.replace(cfg, db=str(scratch / "memory.db"), space="default"), **shared)
    started = time.perf_counter()
    mem.consolidate(flush=True, no_llm=mem.chat is None)
    return mem, {"ingest_s": built["ingest_s"], "consolidate_s": time.perf_counter() - started}


def _slug(name: str) -> str:
    """A conversation name usable as one directory name."""
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or "conversation"
