"""`memcli inspect entity NAME`: what the memory knows about one named thing.

The entity is found by its id (`en4`), its name or any alias, written in any case, with or
without a possessive or inner punctuation (the canonical key of `consolidate.names`). The
view lists its description and aliases, its relations to other entities, and everything
said about it in time order: the facts about it (current or superseded, with validity
dates and the turns behind each) and the turns that mention it (with any value written
next to the name).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcli.errors import NotFound, did_you_mean
from memcli.models import Edge, Node, parse_node_id
from memcli.text import canonical_key, truncate

if TYPE_CHECKING:
    from memcli.ops.base import MemoryBase
    from memcli.store import Store

TEXT_CHARS = 160


def find_entity(store: Store, space: str, name: str) -> Node:
    """The entity a name, alias or id refers to; NotFound (with a suggestion) otherwise."""
    parsed = parse_node_id(name.strip())
    if parsed is not None and parsed[0] == "entity":
        return store.node_by_public_id(name.strip(), space)
    wanted = canonical_key(name)
    every = list(store.iter_nodes(space, "entity"))
    for node in every:
        keys = {
            canonical_key(node.text),
            *(canonical_key(a) for a in node.props.get("aliases", [])),
        }
        if wanted and wanted in keys:
            return node
    raise NotFound(
        f"no entity named {name!r} in space {space!r}{did_you_mean(name, [n.text for n in every])}",
        fix="list entities with `memcli list --kind entity`, or run `memcli consolidate` first",
    )


def _when(node: Node) -> str:
    valid = node.props.get("valid_from")
    return str(valid) if isinstance(valid, str) and valid else (node.timestamp or "")[:16]


def _item(node: Node, edge: Edge, sources: dict[int, list[str]]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "node_id": node.node_id,
        "kind": node.kind,
        "date": _when(node),
        "speaker": node.speaker,
        "text": truncate(node.text, TEXT_CHARS),
    }
    for key in ("values", "statements"):
        if edge.props.get(key):
            item[key] = edge.props[key]
    if node.kind == "fact":
        item["status"] = node.status or "active"
        item["valid_to"] = node.props.get("valid_to")
        item["turns"] = sources.get(node.id, [])
    return item


def _relations(store: Store, entity: Node, edges: list[Edge]) -> list[dict[str, Any]]:
    others = store.nodes_by_ids(e.dst if e.src == entity.id else e.src for e in edges)
    out = []
    for e in edges:
        other = others.get(e.dst if e.src == entity.id else e.src)
        if other is None:
            continue
        for said in e.props.get("predicates", []):
            subject, obj = (entity, other) if e.src == entity.id else (other, entity)
            out.append({"subject": subject.text, "predicate": said.get("predicate"),
                        "object": obj.text, "object_id": other.node_id,
                        "date": said.get("date"), "turns": said.get("turns", [])})  # fmt: skip
    return out


def entity_view(mem: MemoryBase, name: str) -> dict[str, Any]:
    """An entity's description, aliases, relations and timeline (facts and turns)."""
    store = mem.store
    entity = find_entity(store, mem.space, name)
    edges = store.edges_of([entity.id])
    mentions = [e for e in edges if e.type == "MENTIONS" and e.dst == entity.id]
    nodes = store.nodes_by_ids(e.src for e in mentions)
    facts = [i for i, n in nodes.items() if n.kind != "episode"]
    sources = store.sources_of(facts) if facts else {}
    timeline = [_item(nodes[e.src], e, sources) for e in mentions if e.src in nodes]
    timeline.sort(key=lambda item: (item["date"] or "", item["node_id"]))
    return {
        "node_id": entity.node_id,
        "name": entity.text,
        "type": entity.props.get("type"),
        "aliases": entity.props.get("aliases", []),
        "description": entity.props.get("description") or "",
        "mentions": len(mentions),
        "relations": _relations(store, entity, [e for e in edges if e.type == "RELATION"]),
        "timeline": timeline,
    }


def restore_profiles(mem: MemoryBase, entity_ids: dict[int, str]) -> int:
    """Give entities (id -> space) their profile vectors again after their memories were
    embedded anew (`reindex`, `import`); call inside the transaction that stored those.
    Returns how many were set."""
    from memcli.consolidate.entity_merge import profile_vectors
    from memcli.llm.embedder import embed_all

    embedder = mem.load_embedder()  # the callers have checked it (or, reindex, replace it)
    if embedder is None or not entity_ids:
        return 0
    rows = profile_vectors(mem.store, lambda texts: embed_all(embedder, texts), list(entity_ids))
    mem.store.put_vectors((i, entity_ids[i], kind, v) for i, kind, v in rows if v is not None)
    return len(rows)
