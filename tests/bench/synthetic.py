"""Synthetic stores N times the dev data, for measuring how query latency grows with size.

The dev conversations are ingested and consolidated (`--no-llm`) once into a base store.
A store of N times that size holds N copies of every turn and segment: copy c renames the
speakers (each copy is a different pair of people), lives in its own sessions, and keeps the
original's vector plus a little noise (so no two vectors are equal). Concepts are shared
by all copies, as a canonicalised store would share them, so they grow into hubs.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

from memcli.config import Config
from memcli.eval import locomo
from memcli.memory import Memory
from memcli.models import Edge, Node
from memcli.store import Store, open_store

NAMES = (
    "Alice Bruno Chloe Dmitri Elena Farid Greta Hugo Iris Jonas Kira Liam Maya Nikos Olga Pavel "
    "Quinn Rosa Sami Tara Umar Vera Wanda Xavier Yara Zane Amara Boris Celia Dario Esme Felix "
    "Gemma Hamid Ilse Joao Kenji Lena Marco Nadia Oscar Priya Rafael Sofia Tomas Ulla Victor "
    "Willa Yusuf Zoe"
).split()


def dev_questions(path: Path) -> list[str]:
    """Every scored question of the dev file (categories 1-4)."""
    return [qa["question"] for s in locomo.load_samples(str(path)) for qa in locomo.questions(s)]


def base_store(cfg: Config, dev: Path, workdir: Path, shared: dict[str, Any]) -> Path:
    """The dev conversations in one space, ingested and consolidated without an LLM."""
    path = workdir / "scaled-1x.db"
    if path.exists():
        return path
    turns = workdir / "dev-turns.json"
    samples = locomo.load_samples(str(dev))
    keep = [{"sample_id": s.get("sample_id"), "conversation": s["conversation"]} for s in samples]
    turns.write_text(json.dumps(keep), encoding="utf-8")
    with Memory(dataclasses.replace(cfg, db=str(path), space="default"), **shared) as mem:
        shared.setdefault("embedder", mem.load_embedder())
        mem.ingest([str(turns)], fmt="locomo")
        mem.consolidate(flush=True, no_llm=True)
    return path


def _renamer(speakers: list[str], copy: int) -> tuple[re.Pattern[str], dict[str, str]]:
    names = {s: NAMES[(copy * len(speakers) + i) % len(NAMES)] for i, s in enumerate(speakers)}
    pattern = re.compile(r"\b(" + "|".join(re.escape(s) for s in speakers) + r")\b")
    return pattern, names


def _copy_node(store: Store, node: Node, copy: int, rename: Any) -> int:
    pattern, names = rename
    swap = (lambda t: pattern.sub(lambda m: names[m[1]], t)) if names else (lambda t: t)
    return store.insert_node(
        node.space,
        node.kind,
        swap(node.text),
        speaker=swap(node.speaker) if node.speaker else None,
        session=f"copy{copy}:{node.session}" if node.session else None,
        seq=node.seq,
        timestamp=node.timestamp,
        ref=f"{node.ref}#{copy}" if node.ref else None,
        belief=node.belief,
        status=node.status,
        props=node.props,
    )


def _add_copy(store: Store, nodes: list[Node], edges: list[Edge], vectors: dict, copy: int) -> int:
    import numpy as np

    rng = np.random.default_rng(copy)
    speakers = sorted({n.speaker for n in nodes if n.speaker})
    rename = _renamer(speakers, copy)
    mapping = {n.id: n.id for n in nodes if n.kind == "concept"}  # shared by every copy
    rows = []
    for node in nodes:
        if node.kind == "concept":
            continue
        mapping[node.id] = _copy_node(store, node, copy, rename)
        if node.id in vectors:
            v = vectors[node.id] + rng.normal(0.0, 0.02, vectors[node.id].shape)
            rows.append((mapping[node.id], node.space, node.kind, v / np.linalg.norm(v)))
    store.put_vectors(rows)
    copied = [Edge(mapping[e.src], mapping[e.dst], e.type, e.weight, e.props) for e in edges]
    return store.add_edges("default", copied)


def build_scaled(
    cfg: Config, dev: Path, workdir: Path, factor: int, shared: dict[str, Any]
) -> tuple[Path, dict[str, int]]:
    """A store `factor` times the dev data (built once per workdir); its node counts."""
    base = base_store(cfg, dev, workdir, shared)
    path = workdir / f"scaled-{factor}x.db"
    if not path.exists():
        with open_store(base) as store:
            store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copyfile(base, path)
        with open_store(path) as store:
            nodes = list(store.iter_nodes("default"))
            edges = list(store.iter_edges("default"))
            vectors = store.get_vectors([n.id for n in nodes])
            for copy in range(1, factor):
                with store.transaction():
                    _add_copy(store, nodes, edges, vectors, copy)
    with open_store(path) as store:
        return path, store.count_nodes("default")
