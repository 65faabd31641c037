"""Helpers many tests share: a config file in tmp_path, and raw reads of a store file (bytes,
counts, integrity)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcli.store import open_store
from memcli.store.sqlite.db import connect


def write_config(tmp_path: Path, **sections: dict[str, Any]) -> Path:
    """A YAML config in tmp_path (JSON is YAML); embeddings off unless a section says otherwise."""
    data: dict[str, Any] = {"embedding": {"provider": "none"}}
    data.update(sections)
    path = tmp_path / "memcli.yaml"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def raw_bytes(db: Path) -> bytes:
    """The database file and its WAL, concatenated, as they are on disk."""
    data = b""
    for suffix in ("", "-wal"):
        part = Path(str(db) + suffix)
        if part.exists():
            data += part.read_bytes()
    return data


def counts(db: Path, space: str = "default") -> dict[str, Any]:
    """Node counts by kind, edge counts by type and source rows of one space."""
    with open_store(db) as store:
        return {
            "nodes": store.count_nodes(space),
            "edges": store.count_edges(space),
            "sources": [(s["path"], s["sha256"]) for s in store.sources(space)],
        }


def integrity(db: Path) -> dict[str, Any]:
    """integrity_check (FTS5 and sqlite-vec tables included), dangling edges, provenance
    links and full-text rows, and the number of episodes and sources."""
    conn = connect(db)
    try:
        check = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        dangling = conn.execute(
            "SELECT COUNT(*) FROM edges WHERE src NOT IN (SELECT id FROM nodes)"
            " OR dst NOT IN (SELECT id FROM nodes)"
        ).fetchone()[0]
        links = conn.execute(
            "SELECT COUNT(*) FROM node_sources WHERE node NOT IN (SELECT id FROM nodes)"
            " OR source NOT IN (SELECT id FROM sources)"
        ).fetchone()[0]
        tables = [f"fts_{i}" for (i,) in conn.execute("SELECT id FROM fts_spaces")]
        fts = sum(
            conn.execute(
                f"SELECT COUNT(*) FROM {t}_docsize WHERE id NOT IN (SELECT id FROM nodes)"
            ).fetchone()[0]
            for t in tables
        )
        episodes = conn.execute("SELECT COUNT(*) FROM nodes WHERE kind = 'episode'").fetchone()[0]
        sources = conn.execute("SELECT COUNT(*) FROM sources").fetchone()[0]
    finally:
        conn.close()
    return {
        "check": check,
        "dangling_edges": dangling,
        "dangling_links": links,
        "orphan_fts_rows": fts,
        "episodes": episodes,
        "sources": sources,
    }


def llm_config(server_url: str) -> dict[str, Any]:
    """Config sections for chat and embeddings from the fake Ollama server, no retry waits."""
    return {
        "llm": {"provider": "ollama", "model": "fake-chat", "url": server_url, "max_retries": 1},
        "embedding": {"provider": "ollama", "model": "fake-embed", "url": server_url},
    }
