"""Broad questions want memories from all over the conversation, not one corner of it.

A question asking for an order, a progression, a summary or a total (memcli.retrieval.
shapes) is answered by memories spread over many sessions, and a plain ranking piles up
the turns of the one or two sessions that match best. `spread` re-orders a ranking in
rounds: first the best memory of every session (best sessions first), then each session's
second best, and so on. A memory outside any session (a fact, a reflection) is a session
of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memcli.models import Node


def spread(
    order: Sequence[tuple[int, float]], nodes: Mapping[int, Node]
) -> list[tuple[int, float]]:
    """The ranking re-ordered by each memory's rank within its session, then by score."""
    seen: dict[str, int] = {}
    keyed = []
    for position, (node_id, score) in enumerate(order):
        node = nodes.get(node_id)
        session = node.session if node is not None and node.kind == "episode" else None
        key = session if session is not None else f"#{node_id}"
        round_ = seen.get(key, 0)
        seen[key] = round_ + 1
        keyed.append((round_, position, node_id, score))
    return [(node_id, score) for _, _, node_id, score in sorted(keyed)]
