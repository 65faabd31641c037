"""A small hand-built graph with every node kind, for the prune tests."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from memcli.models import Edge, node_public_id
from memcli.store import Store


@dataclass
class Graph:
    """Row ids of the hand-built graph, by a short name."""

    ids: dict[str, int]

    def __getitem__(self, name: str) -> int:
        return self.ids[name]

    def public(self, *names: str) -> set[str]:
        return {self.pid(n) for n in names}

    def pid(self, name: str) -> str:
        kind = {"e": "episode", "g": "segment", "f": "fact", "r": "reflection"}.get(name[0])
        kind = kind or {"c": "concept", "n": "entity"}[name[0]]
        return node_public_id(kind, self.ids[name])


def build(store: Store, space: str = "default") -> Graph:
    """Two sources, two sessions, and every derived kind, some mixing both sources.

    Episodes: s1 = e1 e2 e3 (file a.jsonl; e3 is also in b.jsonl), s2 = e4 e5 (b.jsonl),
    e6 has no date. Segments g1 <- e1 e2 e3, g2 <- e4 e5. Facts f1 <- e1, f2 <- e2 e4,
    f3 <- e5 (superseded by f4, belief 0.2), f4 <- e4 (belief 0.9). Reflections r1 <- f1,
    r2 <- f1 f4. Concepts c1 <- e1 f1, c2 <- g1 g2. Entities n1 <- e1, n2 <- e2, n3 <- e4,
    with RELATION n1 -> n2 -> n3.
    """
    ids: dict[str, int] = {}
    turns = [
        ("e1", "s1", "2024-01-10T09:00:00", "Ana rescued a greyhound called Pistachio"),
        ("e2", "s1", "2024-01-10T09:01:00", "Ben started woodturning classes on Tuesdays"),
        ("e3", "s1", "2024-01-10T09:02:00", "they both like hiking near the lighthouse"),
        ("e4", "s2", "2024-05-20T18:00:00+02:00", "Ben finished a blue woodturning vase"),
        ("e5", "s2", "2024-05-20T18:05:00+02:00", "Ana lives in Porto now"),
        ("e6", "s3", None, "an undated remark about quinces"),
    ]
    with store.transaction():
        a = store.insert_source(space, "a.jsonl", hashlib.sha256(b"a").hexdigest(), "jsonl", 3)
        b = store.insert_source(space, "b.jsonl", hashlib.sha256(b"b").hexdigest(), "jsonl", 3)
        for seq, (name, session, ts, text) in enumerate(turns):
            ids[name] = store.insert_node(
                space, "episode", text, session=session, seq=seq, timestamp=ts, ref=f"D:{seq}"
            )
        store.link_sources([(ids["e1"], a), (ids["e2"], a), (ids["e3"], a), (ids["e3"], b)])
        store.link_sources([(ids["e4"], b), (ids["e5"], b), (ids["e6"], b)])
        derived = [
            ("g1", "segment", "hiking woodturning and a greyhound", {}),
            ("g2", "segment", "a vase and a move to Porto", {}),
            ("f1", "fact", "Ana owns a greyhound named Pistachio", {"belief": 0.8}),
            ("f2", "fact", "Ben practises woodturning", {"belief": 0.7}),
            ("f3", "fact", "Ana lives in Lisbon", {"belief": 0.2, "status": "superseded"}),
            ("f4", "fact", "Ana lives in Porto", {"belief": 0.9, "status": "active"}),
            ("r1", "reflection", "Ana loves dogs", {"belief": 0.6}),
            ("r2", "reflection", "Ana settles down with a dog", {"belief": 0.4}),
            ("c1", "concept", "greyhound", {"key": "greyhound"}),
            ("c2", "concept", "woodturning", {"key": "woodturning"}),
            ("n1", "entity", "Pistachio", {}),
            ("n2", "entity", "Ben", {}),
            ("n3", "entity", "Porto", {}),
        ]
        for name, kind, text, extra in derived:
            ids[name] = store.insert_node(space, kind, text, **extra)
        edges = [
            ("e1", "e2", "NEXT"), ("e2", "e3", "NEXT"), ("e4", "e5", "NEXT"),
            ("e1", "g1", "PART_OF"), ("e2", "g1", "PART_OF"), ("e3", "g1", "PART_OF"),
            ("e4", "g2", "PART_OF"), ("e5", "g2", "PART_OF"), ("g1", "g2", "RELATED"),
            ("f1", "e1", "DERIVED_FROM"), ("f2", "e2", "DERIVED_FROM"),
            ("f2", "e4", "DERIVED_FROM"), ("f3", "e5", "DERIVED_FROM"),
            ("f4", "e4", "DERIVED_FROM"), ("f4", "f3", "SUPERSEDES"),
            ("r1", "f1", "DERIVED_FROM_FACT"), ("r2", "f1", "DERIVED_FROM_FACT"),
            ("r2", "f4", "DERIVED_FROM_FACT"),
            ("e1", "c1", "HAS_CONCEPT"), ("f1", "c1", "ABOUT_CONCEPT"),
            ("g1", "c2", "HAS_CONCEPT"), ("g2", "c2", "HAS_CONCEPT"),
            ("e1", "n1", "MENTIONS"), ("e2", "n2", "MENTIONS"), ("e4", "n3", "MENTIONS"),
            ("n1", "n2", "RELATION"), ("n2", "n3", "RELATION"),
        ]  # fmt: skip
        store.add_edges(space, [Edge(ids[s], ids[d], t) for s, d, t in edges])
        store.ensure_vectors(3)
        store.set_meta("embedding.dim", "3")
        store.put_vectors((i, space, "x", [1.0, float(i), 0.5]) for i in ids.values())
        store.mark_processed(space, "facts", [ids["e1"], ids["e4"]])
    return Graph(ids)


ALL = {"e1", "e2", "e3", "e4", "e5", "e6", "g1", "g2", "f1", "f2", "f3", "f4", "r1", "r2",
       "c1", "c2", "n1", "n2", "n3"}  # fmt: skip


def remaining(store: Store, space: str = "default") -> set[str]:
    return {n.node_id for n in store.iter_nodes(space)}


def edge_set(store: Store, graph: Graph) -> set[tuple[str, str, str]]:
    names = {v: k for k, v in graph.ids.items()}
    return {(names[e.src], names[e.dst], e.type) for e in store.iter_edges("default")}
