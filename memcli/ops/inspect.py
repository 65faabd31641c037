"""`memcli inspect`: what is stored, and one node with its neighbourhood and provenance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcli.text import truncate

if TYPE_CHECKING:
    from memcli.models import Node
    from memcli.ops import Memory
    from memcli.store import Store


def stats(mem: Memory) -> dict[str, Any]:
    """Counts by node kind and edge type, spaces, embedding settings and file size."""
    store = mem.store
    dim = store.get_meta("embedding.dim")
    identity = store.get_meta("embedding.identity")
    provider, _, model = (identity or mem.embedder_identity()).partition(":")
    return {
        "db": str(store.path),
        "space": mem.space,
        "nodes": store.count_nodes(mem.space),
        "edges": store.count_edges(mem.space),
        "sessions": store.count_sessions(mem.space),
        "sources": len(store.sources(mem.space)),
        "spaces": store.spaces(),
        "embedding": {
            "provider": provider,
            "model": model or None,
            "dim": int(dim) if dim else None,
        },
        "bytes": store.file_bytes(),
        "consolidation": consolidation_health(mem),
    }


#: Stage -> (kind of node it consumes) for counting what is still pending.
_PENDING_KIND = {
    "segment": "episode",
    "summarize": "segment",
    "link": "segment",
    "gate": "segment",
    "facts": "episode",
    "concepts": "segment",
    "entities": "segment",
    "supersede": "fact",
    "reflect": "fact",
}
_RUN_FIELDS = ("status", "started_at", "finished_at", "items", "nodes", "edges", "llm_calls")
_RUN_FIELDS += ("cache_hits", "prompt_tokens", "completion_tokens", "failures")


def consolidation_health(mem: Memory) -> dict[str, Any]:
    """Last run of each consolidation stage, token totals, and units still pending."""
    store, space = mem.store, mem.space
    last = {r["stage"]: r for r in store.last_runs(space)}
    return {
        "last_runs": {
            stage: {
                **{k: run[k] for k in _RUN_FIELDS},
                "reason": run["last_error"],
                "extra": run["extra"],
            }
            for stage, run in last.items()
        },
        "totals": store.run_totals(space),
        "gate": store.run_extra_totals(space, "gate"),
        "pending": {
            stage: len(store.unprocessed(space, stage, kind=kind))
            for stage, kind in _PENDING_KIND.items()
        },
    }


def _neighbours(store: Store, node: Node) -> list[dict[str, Any]]:
    """The node's edges, each with the node at its other end (text shortened)."""
    edges = store.edges_of([node.id])
    others = store.nodes_by_ids(e.dst if e.src == node.id else e.src for e in edges)
    neighbours = []
    for e in sorted(edges, key=lambda e: (e.type, e.src, e.dst)):
        other = others.get(e.dst if e.src == node.id else e.src)
        if other is None:
            continue
        neighbours.append(
            {
                "direction": "out" if e.src == node.id else "in",
                "type": e.type,
                "weight": e.weight,
                "node_id": other.node_id,
                "kind": other.kind,
                "text": truncate(other.text, 80),
                **({"props": e.props} if e.props else {}),
            }
        )
    return neighbours


def node_view(mem: Memory, public_id: str) -> dict[str, Any]:
    """A node's fields and props, its edges with the node at the other end, and provenance."""
    store = mem.store
    node = store.node_by_public_id(public_id, mem.space)
    return {
        "node_id": node.node_id,
        "kind": node.kind,
        "space": node.space,
        "text": node.text,
        "speaker": node.speaker,
        "session": node.session,
        "seq": node.seq,
        "timestamp": node.timestamp,
        "ref": node.ref,
        "belief": node.belief,
        "status": node.status,
        "created_at": node.created_at,
        "props": node.props,
        "neighbours": _neighbours(store, node),
        "provenance": {
            "episodes": store.sources_of([node.id])[node.id] if node.kind != "episode" else [],
            "files": store.source_paths(node.id),
        },
    }
