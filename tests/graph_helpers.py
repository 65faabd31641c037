"""Small hand-built stores for graph and retrieval tests.

Node ids are deliberately non-contiguous (filler nodes in another space sit between them),
so a test that confused igraph vertex indices with node ids would fail.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from memcli.config import Config, EmbeddingConfig
from memcli.memory import Memory
from memcli.models import Edge, embedding_text
from memcli.store import Store, open_store
from tests.fakeserver import FakeModelServer, fake_embedding

FAKE_IDENTITY = "ollama:fake-embed"


def embedding_config(server: FakeModelServer | None) -> EmbeddingConfig:
    """The fake server's embeddings, or none at all."""
    if server is None:
        return EmbeddingConfig(provider="none")
    return EmbeddingConfig(
        provider="ollama", model="fake-embed", url=server.ollama_url, max_retries=0
    )


def memory(
    path: Path, server: FakeModelServer | None, tuning: dict[str, Any] | None = None,
    **retrieval: Any,
) -> Memory:  # fmt: skip
    """A Memory over the store at `path` with fake (or no) embeddings; `tuning`: strategy
    parameters by strategy (retrieval.tuning), `retrieval`: other retrieval settings."""
    from memcli.config import RetrievalConfig

    cfg = Config(
        db=str(path),
        embedding=embedding_config(server),
        retrieval=RetrievalConfig(tuning=tuning or {}, **retrieval),
    )
    return Memory(cfg)


class Builder:
    """Adds nodes and edges to one space of a store, with fake vectors when asked."""

    def __init__(self, path: Path, vectors: bool = True, space: str = "default") -> None:
        self.store: Store = open_store(path)
        self.space = space
        self.vectors = vectors
        if vectors:
            with self.store.transaction():
                self.store.ensure_vectors(64)
                self.store.set_meta("embedding.identity", FAKE_IDENTITY)
                self.store.set_meta("embedding.dim", "64")

    def node(self, kind: str, text: str, **fields: Any) -> int:
        """Insert a node after a filler node in another space; return its id."""
        with self.store.transaction():
            self.store.insert_node("filler", "episode", "filler")
            node_id = self.store.insert_node(self.space, kind, text, **fields)
            if self.vectors:
                vec = fake_embedding(embedding_text(text, fields.get("speaker")))
                self.store.put_vectors([(node_id, self.space, kind, vec)])
        return node_id

    def edge(self, src: int, dst: int, type_: str, weight: float = 1.0) -> None:
        with self.store.transaction():
            self.store.add_edges(self.space, [Edge(src, dst, type_, weight)])

    def chain(self, ids: list[int]) -> None:
        """NEXT edges along consecutive turns."""
        for a, b in itertools.pairwise(ids):
            self.edge(a, b, "NEXT")

    def close(self) -> None:
        self.store.close()


def consolidated_graph(path: Path, vectors: bool = False) -> dict[str, int]:
    """Episodes, a segment over three of them, a concept, a fact and a reflection, by hand,
    in a new store at `path`; returns the node ids by name."""
    b = Builder(path, vectors=vectors)
    ids: dict[str, int] = {}
    turns = [
        ("e1", "Bo", "I rescued a greyhound called Biscuit last spring"),
        ("e2", "Ana", "Lovely, greyhounds are so calm"),
        ("e3", "Bo", "Biscuit sleeps all day on the sofa"),
        ("e4", "Ana", "I repainted the kitchen blue"),
    ]
    for seq, (ref, speaker, text) in enumerate(turns):
        ids[ref] = b.node(
            "episode", text, speaker=speaker, session="s1", seq=seq, ref=ref,
            timestamp="2023-05-08T10:00:00",
        )  # fmt: skip
    b.chain([ids[r] for r, _, _ in turns])
    ids["seg"] = b.node("segment", "Bo's new pet dog and its habits", session="s1")
    for ref in ("e1", "e2", "e3"):
        b.edge(ids[ref], ids["seg"], "PART_OF")
    ids["concept"] = b.node("concept", "pet_dog")
    b.edge(ids["e1"], ids["concept"], "HAS_CONCEPT")
    ids["fact"] = b.node("fact", "Bo owns a greyhound named Biscuit", belief=0.95)
    b.edge(ids["fact"], ids["e1"], "DERIVED_FROM")
    ids["refl"] = b.node("reflection", "Bo is devoted to animals")
    b.edge(ids["refl"], ids["fact"], "DERIVED_FROM_FACT")
    b.close()
    return ids


def write_jsonl(path: Path, turns: list[dict[str, Any]]) -> Path:
    """A JSONL conversation file."""
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


# A two-session conversation: a question answered in the next turn without repeating its
# words, a speaker-specific plan, and a turn with a relative date.
CONVERSATION = [
    {"id": "a1", "session": "s1", "timestamp": "2023-05-08T10:00:00", "speaker": "Ana",
     "content": "Morning Bo, how was the weekend?"},
    {"id": "a2", "session": "s1", "timestamp": "2023-05-08T10:01:00", "speaker": "Bo",
     "content": "Great, I went climbing yesterday at the quarry."},
    {"id": "a3", "session": "s1", "timestamp": "2023-05-08T10:02:00", "speaker": "Ana",
     "content": "Which research topic did you finally pick for the thesis?"},
    {"id": "a4", "session": "s1", "timestamp": "2023-05-08T10:03:00", "speaker": "Bo",
     "content": "Tidal energy and how coastal towns store it."},
    {"id": "a5", "session": "s1", "timestamp": "2023-05-08T10:04:00", "speaker": "Ana",
     "content": "I am baking sourdough bread for the market."},
    {"id": "b1", "session": "s2", "timestamp": "2023-06-01T18:00:00", "speaker": "Bo",
     "content": "I will run a marathon in Lisbon next month."},
    {"id": "b2", "session": "s2", "timestamp": "2023-06-01T18:01:00", "speaker": "Ana",
     "content": "Amazing, I will run the half marathon in Porto."},
    {"id": "b3", "session": "s2", "timestamp": "2023-06-01T18:02:00", "speaker": "Bo",
     "content": "My cat Miso knocked the plants over again."},
]  # fmt: skip
