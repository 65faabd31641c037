"""The vectors `prune` leaves behind: a turn is embedded with the opening words of the turn
before it (memcli.models.turn_embedding_text), so when that turn is forgotten the turn after
it is embedded again, beside the turn now before it. Its full-text context is rewritten the
same way by the store (index_context)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.errors import MemcliError
from memcli.models import Node, Turn, turn_embedding_text

if TYPE_CHECKING:
    from memcli.models import Edge, PruneReport
    from memcli.ops.base import MemoryBase
    from memcli.store import Store


def followers(store: Store, removed: set[int]) -> set[int]:
    """The kept turns right after a turn that goes: each was embedded beside it."""
    if not removed:
        return set()
    rows = store.edge_rows(sorted(removed), ["NEXT"])
    return {dst for src, dst, _, _ in rows if src in removed and dst not in removed}


def _turn(nodes: dict[int, Node], node_id: int | None) -> Turn | None:
    """The text and speaker of the turn before, or None when there is none."""
    node = nodes.get(node_id) if node_id is not None else None
    return (node.text, node.speaker) if node is not None else None


def embed_again(mem: MemoryBase, turns: set[int], bridges: list[Edge], report: PruneReport) -> None:
    """Embed each of `turns` (with a vector) again beside the turn before it now (`bridges`
    join the chain across what went). Where the configured embedder cannot be used, the
    turns keep their vectors, and the report counts them so the user can `reindex`."""
    store = mem.store
    if not turns or not store.has_vectors():
        return
    turns = set(store.get_vectors(sorted(turns)))
    before = {e.dst: e.src for e in bridges if e.dst in turns}
    nodes = store.nodes_by_ids(sorted(turns | set(before.values())))
    kept = [nodes[i] for i in sorted(turns) if i in nodes]
    texts = [turn_embedding_text(n.text, n.speaker, _turn(nodes, before.get(n.id))) for n in kept]
    try:
        embedder = mem.embedder
        vectors = embedder.embed(texts) if embedder is not None and texts else None
    except MemcliError:  # unreachable, another model than the store's, none configured
        vectors = None
    if vectors is None:
        report.stale_vectors = len(kept)
        return
    store.put_vectors((n.id, n.space, n.kind, v) for n, v in zip(kept, vectors, strict=True))
    report.embedded_again = len(kept)
