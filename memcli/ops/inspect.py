"""`memcli inspect`: what is stored, and one node with its neighbourhood and provenance."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from memcli.consolidate.registry import LLM_ONLY, PIPELINE
from memcli.text import truncate

if TYPE_CHECKING:
    from memcli.models import Node
    from memcli.ops.base import MemoryBase
    from memcli.store import Store


class _Embedder(TypedDict):
    provider: str
    model: str | None
    dim: int | None


class EmbeddingInfo(_Embedder, total=False):
    """Which embedder made the store's vectors (`none` when it has none); `configured`,
    only when the configured one is another (asking by vector then needs `reindex`)."""

    configured: str


class StoreStats(TypedDict):
    """What `memcli inspect` shows: counts of one space, and the file's settings."""

    db: str
    space: str
    nodes: dict[str, int]  # node kind -> count
    edges: dict[str, int]  # edge type -> count
    sessions: int
    sources: int
    forgotten: int  # turns pruned and kept from coming back (tombstones)
    spaces: list[str]
    embedding: EmbeddingInfo
    bytes: int
    consolidation: dict[str, Any]  # last_runs, totals, pending (see consolidation_health)


class Provenance(TypedDict):
    """Where a node came from: the episodes behind a derived node, the files of an episode."""

    episodes: list[str]  # node ids, what `inspect node` takes
    refs: list[str | None]  # the same episodes' refs in their input
    files: list[str]


class NodeView(TypedDict):
    """What `memcli inspect node` shows: one node, its neighbours and its provenance."""

    node_id: str
    kind: str
    space: str
    text: str
    speaker: str | None
    session: str | None
    seq: int | None
    timestamp: str | None
    ref: str | None
    belief: float | None
    status: str | None
    created_at: str | None
    props: dict[str, Any]
    neighbours: list[dict[str, Any]]  # direction, type, weight, node_id, kind, text[, props]
    provenance: Provenance


def _embedding(
    provider: str, model: str, dim: str | None, stored: str | None, configured: str
) -> EmbeddingInfo:
    info: EmbeddingInfo = {"provider": provider, "model": model or None,
                           "dim": int(dim) if dim else None}  # fmt: skip
    if stored is not None and stored != configured:
        info["configured"] = configured
    return info


def stats(mem: MemoryBase, health: bool = True) -> StoreStats:
    """Counts by node kind and edge type, spaces, embedding settings and file size, and
    (unless `health` is False: it counts pending work, slow on a large store) the
    consolidation's health."""
    store = mem.store
    dim = store.get_meta("embedding.dim")
    identity = store.get_meta("embedding.identity")
    provider, _, model = (identity or mem.embedder_identity()).partition(":")
    return {
        "db": store.location,
        "space": mem.space,
        "nodes": store.count_nodes(mem.space),
        "edges": store.count_edges(mem.space),
        "sessions": store.count_sessions(mem.space),
        "sources": len(store.sources(mem.space)),
        "forgotten": store.count_forgotten(mem.space),
        "spaces": store.spaces(),
        "embedding": _embedding(provider, model, dim, identity, mem.embedder_identity()),
        "bytes": store.file_bytes(),
        "consolidation": consolidation_health(mem) if health else {},
    }


_RUN_FIELDS = ("status", "started_at", "finished_at", "items", "nodes", "edges", "llm_calls",
               "cache_hits", "prompt_tokens", "completion_tokens", "failures")  # fmt: skip


def consolidation_health(mem: MemoryBase) -> dict[str, Any]:
    """Last run of each consolidation stage, token totals, and units still pending."""
    store, space = mem.store, mem.space
    last = {r["stage"]: r for r in store.last_runs(space)}
    health: dict[str, Any] = {
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
        # units whose replies stayed invalid in several runs (memcli.consolidate.stage)
        "given_up": {
            spec.name: n
            for spec in PIPELINE
            if spec.consumes is not None
            and (n := store.run_extra_totals(space, spec.name).get("given_up_invalid", 0))
        },
        "pending": {spec.name: spec.pending(store, space) for spec in PIPELINE},
        "blocked": blocked_stages(mem),
    }
    health["per_turn"] = _per_turn(store, space, health["totals"], health["pending"]["segment"])
    return health


def _per_turn(store: Store, space: str, totals: dict[str, int], waiting: int) -> float | None:
    """Model tokens (prompt + reply, all runs) per turn consolidated so far, or None."""
    turns = store.count_nodes(space).get("episode", 0) - waiting
    tokens = totals.get("prompt_tokens", 0) + totals.get("completion_tokens", 0)
    return round(tokens / turns, 1) if turns > 0 else None


def blocked_stages(mem: MemoryBase) -> dict[str, str]:
    """Stages whose pending work no run will do with the current settings, and why: their
    pending counts stay as they are until the settings change."""
    blocked: dict[str, str] = {}
    if mem.cfg.llm.provider == "none":
        # summarize writes extractive summaries meanwhile and leaves them for an LLM.
        blocked |= dict.fromkeys(sorted({*LLM_ONLY, "summarize"}), "an LLM (llm.provider none)")
    if mem.cfg.embedding.provider == "none":
        blocked["words"] = "embeddings (embedding.provider none)"
    return blocked


def _neighbours(
    store: Store, node: Node, per_type: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The node's edges, each with the node at its other end (text shortened); with
    `per_type`, at most that many of each edge type and direction, and how many of each
    were left out."""
    edges = sorted(store.edges_of([node.id]), key=lambda e: (e.type, e.src, e.dst))
    left_out: dict[str, int] = {}
    if per_type is not None:
        kept: list[Any] = []
        seen: dict[str, int] = {}
        for e in edges:
            key = f"{e.type} {'out' if e.src == node.id else 'in'}"
            seen[key] = seen.get(key, 0) + 1
            if seen[key] <= per_type:
                kept.append(e)
            else:
                left_out[key] = left_out.get(key, 0) + 1
        edges = kept
    others = store.nodes_by_ids(e.dst if e.src == node.id else e.src for e in edges)
    neighbours = []
    for e in edges:
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
    return neighbours, left_out


def _provenance(store: Store, node: Node) -> Provenance:
    """The episodes a derived node came from, by node id (what `inspect node` takes) with
    their refs from the input beside them, and the files an episode was ingested from."""
    pairs = store.source_episodes(node.id) if node.kind != "episode" else []
    return {
        "episodes": [public for public, _ in pairs],
        "refs": [ref for _, ref in pairs],
        "files": store.source_paths(node.id),
    }


def node_view(mem: MemoryBase, public_id: str) -> NodeView:
    """A node's fields and props, its edges with the node at the other end, and provenance."""
    return node_window(mem, public_id)[0]


def node_window(
    mem: MemoryBase, public_id: str, per_type: int | None = None
) -> tuple[NodeView, dict[str, int]]:
    """`node_view` with at most `per_type` neighbours of each edge type and direction
    (all when None), and how many of each ("TYPE in|out") were left out."""
    store = mem.store
    node = store.node_by_public_id(public_id, mem.space)
    neighbours, left_out = _neighbours(store, node, per_type)
    view: NodeView = {
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
        "neighbours": neighbours,
        "provenance": _provenance(store, node),
    }
    return view, left_out
