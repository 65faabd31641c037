"""Stores and configs for consolidation tests: a small dated chat, fake-server models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from memcli.config import Config, ConsolidationConfig, EmbeddingConfig, LLMConfig
from memcli.consolidate.normalize import canonical_tokens
from memcli.memory import Memory
from tests.fakeserver import FakeModelServer

CHAT = Path(__file__).parent / "data" / "consolidate" / "chat.jsonl"


def settings(
    tmp_path: Path,
    server: FakeModelServer | None,
    *,
    llm: bool = True,
    embeddings: bool = True,
    llm_url: str | None = None,
    **consolidation: Any,
) -> dict[str, Any]:
    """Config as a plain mapping (for Config objects and YAML files alike)."""
    url = server.ollama_url if server is not None else None
    data: dict[str, Any] = {"db": str(tmp_path / "memory.db")}
    data["embedding"] = (
        {"provider": "ollama", "model": "fake-embed", "url": url}
        if embeddings
        else {"provider": "none"}
    )
    data["llm"] = (
        {
            "provider": "ollama",
            "model": "fake-chat",
            "url": llm_url or url,
            "max_retries": 1,
            "timeout": 10.0,
        }
        if llm
        else {"provider": "none"}
    )
    # The fixtures' segments are a few short turns and their fake vectors alike at random:
    # every segment is summarized and linked by the model unless a test says otherwise.
    data["consolidation"] = {"summary_llm_min_words": 0, "link_min_similarity": 0.0}
    data["consolidation"].update(consolidation)
    return data


def config(tmp_path: Path, server: FakeModelServer | None, **kwargs: Any) -> Config:
    """A Config for a store in tmp_path whose models live on the fake server."""
    data = settings(tmp_path, server, **kwargs)
    return Config(
        db=data["db"],
        embedding=EmbeddingConfig(**data["embedding"]),
        llm=LLMConfig(**data["llm"]),
        consolidation=ConsolidationConfig(**data.get("consolidation", {})),
    )


def config_file(tmp_path: Path, server: FakeModelServer | None, **kwargs: Any) -> Path:
    """The same settings as a YAML file for the CLI's --config."""
    path = tmp_path / "memcli.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(settings(tmp_path, server, **kwargs)))
    return path


def ingested(tmp_path: Path, server: FakeModelServer | None, **kwargs: Any) -> Memory:
    """A Memory over a fresh store holding the test chat."""
    mem = Memory(config(tmp_path, server, **kwargs))
    mem.ingest([str(CHAT)])
    return mem


def opened(tmp_path: Path, server: FakeModelServer | None, **kwargs: Any) -> Memory:
    """A Memory over the store already in tmp_path (the `chat_store` fixture's copy)."""
    return Memory(config(tmp_path, server, **kwargs))


def long_chat(path: Path, sessions: int) -> Path:
    """The test chat's three sessions repeated as `sessions` dated sessions."""
    turns = [json.loads(line) for line in CHAT.read_text().splitlines()]
    base = sorted({t["session"] for t in turns})
    with path.open("w") as out:
        for n in range(sessions):
            src = base[n % len(base)]
            for t in (t for t in turns if t["session"] == src):
                day = f"2023-{1 + n // 28:02d}-{1 + n % 28:02d}T10:00:00"
                row = {**t, "id": f"r{n}:{t['id']}", "session": f"r{n}", "timestamp": day}
                out.write(json.dumps(row) + "\n")
    return path


def graph_counts(mem: Memory) -> tuple[dict[str, int], dict[str, int]]:
    """(nodes by kind, edges by type) of the memory's space."""
    return mem.store.count_nodes(mem.space), mem.store.count_edges(mem.space)


def canonical_label(label: str) -> str:
    """The snake_case label `canonical_tokens` gives a concept ('' when nothing is left), as
    the concept index stores it."""
    return "_".join(canonical_tokens(label))
