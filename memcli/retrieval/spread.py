"""Broad questions want memories from all over the conversation, not one corner of it.

A question asking for an order, a progression, a summary or a total (memcli.retrieval.
shapes) is answered by memories spread over many sessions, and a plain ranking piles up
the turns of the one or two sessions that match best. `spread` re-orders a ranking in
rounds: first the best memory of every session (best sessions first), then each session's
second best, and so on. A memory outside any session (a fact, a reflection) is a session
of its own.

`interleave` merges rankings in the same rounds: a question about an enumeration is
searched item by item (memcli.retrieval.shapes), and each item's best memory comes before
any ranking's second best.
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


def interleave(orders: Sequence[Sequence[tuple[int, float]]]) -> list[tuple[int, float]]:
    """Several rankings merged in rounds: in each round every ranking, in the order given,
    adds its best memory not yet taken. A memory keeps the score of the ranking that
    added it."""
    merged: dict[int, float] = {}
    heads = [0] * len(orders)
    while any(head < len(order) for head, order in zip(heads, orders, strict=True)):
        for n, order in enumerate(orders):
            while heads[n] < len(order) and order[heads[n]][0] in merged:
                heads[n] += 1
            if heads[n] < len(order):
                node_id, score = order[heads[n]]
                merged[node_id] = score
                heads[n] += 1
    return list(merged.items())
