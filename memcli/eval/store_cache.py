"""Built benchmark stores kept on disk, so comparing retrieval does not rebuild them.

Building a conversation's store (ingest, then consolidation) is the slow part of a
benchmark run, and retrieval work never changes it. So a store is built once into a cache
directory and reused while nothing that shapes it has changed. Its key hashes:
- the conversation's input files (what `Conversation.inputs` writes or names) and format;
- the settings that shape a store: embedding, consolidation and the LLM used (if any);
- the code that builds stores: every module of memcli except the ones only reading them
  (retrieval, packing the context, answering, the CLI, the MCP server and the
  presentation), see `BUILD_EXCLUDED`.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
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
BUILT = "built.json"


def code_hash(package: Path = PACKAGE) -> str:
    """sha256 over the path and bytes of every module that builds stores."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith(BUILD_EXCLUDED):
            continue
        digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def settings_identity(cfg: Config) -> str:
    """The settings that shape a built store, as text."""
    llm = "none" if cfg.llm.provider == "none" else f"{cfg.llm.provider}:{cfg.llm.model}"
    return f"{cfg.embedding!r}|{cfg.consolidation!r}|{llm}"


def store_key(conv: Conversation, cfg: Config, code: str) -> str:
    """The cache key of a conversation's built store (the first 20 hex digits)."""
    digest = hashlib.sha256(f"{code}|{settings_identity(cfg)}|{conv.fmt}".encode())
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
) -> tuple[Path, dict[str, Any]]:
    """The path of the conversation's consolidated store in `cache` (built now if missing,
    or if `rebuild`), and what building it took (from when it was built)."""
    key = store_key(conv, cfg, code or code_hash())
    home = cache / _slug(conv.name) / key
    if rebuild and home.exists():
        shutil.rmtree(home)
    if not (home / BUILT).is_file():
        _build(conv, cfg, home, shared, key)
    return home / "memory.db", json.loads((home / BUILT).read_text(encoding="utf-8"))


def _build(conv: Conversation, cfg: Config, home: Path, shared: dict[str, Any], key: str) -> None:
    """Build into a scratch directory beside `home`, then move it into place whole, so an
    interrupted build never leaves a store that looks finished."""
    home.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".building-", dir=home.parent))
    try:
        mem, timing = memory_for(conv, cfg, scratch, shared, consolidate=True)
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


def _slug(name: str) -> str:
    """A conversation name usable as one directory name."""
    return re.sub(r"[^\w.-]+", "_", name).strip("._") or "conversation"
