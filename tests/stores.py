"""Stores built once per test session and handed to each test as its own copy of the file.

Ingesting and consolidating is the slow part of many tests' setup. A test that needs a store
in a known state asks the session's `StoreCache` (the `stores` fixture) for a copy: the first
request builds the store through the public library (`memcli.memory.Memory`, `memcli.store`),
with the models on a fake server started for the build; later requests copy the file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.memory import Memory
from memcli.store import open_store
from tests.consolidate_helpers import config, graph_counts, ingested
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer
from tests.graph_helpers import consolidated_graph
from tests.paths import REPO
from tests.prune_graph import build as build_prune_graph

TWO_CONVERSATIONS = REPO / "tests" / "data" / "reliability" / "two-conversations.json"


def _find_dev_file(name: str) -> Path | None:
    """shared/data/<name> beside the repository or one of its parents (worktrees nest)."""
    for folder in REPO.parents:
        candidate = folder / "shared" / "data" / name
        if candidate.is_file():
            return candidate
    return None


#: The LoCoMo dev split, when this machine has it (tests that need it skip otherwise).
LOCOMO_DEV = _find_dev_file("locomo-dev.json")


@dataclass(frozen=True)
class Built:
    """A store file and what building it reported (JSON-ready values)."""

    path: Path
    info: dict[str, Any] = field(default_factory=dict)


def _chat(folder: Path, server: FakeModelServer) -> dict[str, Any]:
    """The consolidation tests' chat, ingested with fake embeddings; nothing consolidated."""
    ingested(folder, server).close()
    return {}


def _chat_no_llm(folder: Path, server: FakeModelServer) -> dict[str, Any]:
    """The chat consolidated with --no-llm, though an LLM is configured."""
    with ingested(folder, server) as mem:
        report = mem.consolidate(flush=True, no_llm=True).to_dict()
    return {"report": report, "chat_requests": len(server.requests_to("/api/chat"))}


def _chat_scripted(folder: Path, server: FakeModelServer) -> dict[str, Any]:
    """The chat consolidated by the scripted model (which invents a few ids)."""
    llm = ScriptedLLM()
    server.responder = llm
    with ingested(folder, server) as mem:
        report = mem.consolidate(flush=True).to_dict()
        counts = graph_counts(mem)
    return {"report": report, "counts": counts, "calls": dict(llm.calls),
            "reasks": dict(llm.reasks)}  # fmt: skip


def _locomo_dev(folder: Path, server: FakeModelServer) -> dict[str, Any]:
    """The LoCoMo dev conversations consolidated without an LLM."""
    assert LOCOMO_DEV is not None, "no LoCoMo dev file on this machine"
    with Memory(config(folder, server, llm=False)) as mem:
        mem.ingest([str(LOCOMO_DEV)], fmt="locomo")
        report = mem.consolidate(flush=True, no_llm=True).to_dict()
    return {"report": report}


def _two_conversations(folder: Path, server: FakeModelServer) -> dict[str, Any]:
    """The reliability fixture's two conversations, ingested with fake embeddings."""
    with Memory(config(folder, server, llm=False)) as mem:
        mem.ingest([str(TWO_CONVERSATIONS)])
    return {}


def _prune_graph(folder: Path, server: FakeModelServer) -> dict[str, Any]:
    """The prune tests' hand-built graph with every node kind (row ids under "ids")."""
    with open_store(folder / "memory.db") as store:
        return {"ids": build_prune_graph(store).ids}


def _consolidated_graph(folder: Path, server: FakeModelServer) -> dict[str, Any]:
    """The retrieval tests' small hand-built consolidated store, without vectors."""
    return {"ids": consolidated_graph(folder / "memory.db")}


def _consolidated_graph_vectors(folder: Path, server: FakeModelServer) -> dict[str, Any]:
    """The same store with fake-embedding vectors for every node."""
    return {"ids": consolidated_graph(folder / "memory.db", vectors=True)}


BUILDERS: dict[str, Callable[[Path, FakeModelServer], dict[str, Any]]] = {
    "chat": _chat,
    "chat-no-llm": _chat_no_llm,
    "chat-scripted": _chat_scripted,
    "locomo-dev": _locomo_dev,
    "two-conversations": _two_conversations,
    "prune-graph": _prune_graph,
    "consolidated-graph": _consolidated_graph,
    "consolidated-graph-vectors": _consolidated_graph_vectors,
}


class StoreCache:
    """Builds each named store (see `BUILDERS`) on first use, then hands out copies."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[str, Built] = {}

    def get(self, name: str) -> Built:
        """The session's build of store `name` (never write to it: take a copy)."""
        if name not in self._built:
            folder = self.root / name
            folder.mkdir(parents=True)
            with FakeModelServer() as server:
                info = BUILDERS[name](folder, server)
            # A round trip through JSON: every test sees fresh, plain values.
            self._built[name] = Built(folder / "memory.db", json.loads(json.dumps(info)))
        return self._built[name]

    def copy(self, name: str, dest: Path) -> Built:
        """A copy of store `name` at `dest` (a database file path), with its build info."""
        built = self.get(name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal"):  # a cleanly closed store has no WAL left; copy one if so
            source = Path(f"{built.path}{suffix}")
            if source.exists():
                shutil.copy(source, f"{dest}{suffix}")
        return Built(dest, json.loads(json.dumps(built.info)))
