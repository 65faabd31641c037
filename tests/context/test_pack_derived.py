"""Facts and reflections are packed within words of their own: however many a model derived,
and however well they rank, the turns in the context are those packed without them."""

from __future__ import annotations

from memcli.context.pack import pack
from memcli.models import Hit, Node

CAPS = {"fact": 60, "reflection": 20, "episode": 80}


def _hit(node_id: int, kind: str, text: str, score: float) -> Hit:
    return Hit(Node(node_id, kind, "default", text, speaker="Ana" if kind == "episode" else None),
               score)  # fmt: skip


def _ranked() -> list[Hit]:
    turns = [_hit(i, "episode", f"Turn {i} says twelve plain words about the boat and the dock.",
                  1.0 - i / 100) for i in range(1, 31)]  # fmt: skip
    notes = [_hit(100 + i, "fact", f"A weak claim number {i} repeated about the boat and dock.",
                  2.0 - i / 100) for i in range(1, 41)]  # fmt: skip
    return sorted([*turns, *notes], key=lambda h: -h.score)


def _turns(hits: list[Hit]) -> list[int]:
    return sorted(h.node.id for h in hits if h.node.kind == "episode")


def test_derived_memories_never_push_a_turn_out() -> None:
    ranked = _ranked()
    alone = pack([h for h in ranked if h.node.kind == "episode"], 150, CAPS)
    both = pack(ranked, 150, CAPS, derived=60)
    assert _turns(both.included) == _turns(alone.included) != []
    facts = [h for h in both.included if h.node.kind == "fact"]
    assert facts and sum(len(f.node.text.split()) + 3 for f in facts) <= 60 + 3 * len(facts)


def test_without_words_of_their_own_no_fact_is_packed() -> None:
    packed = pack(_ranked(), 150, CAPS, derived=0)
    assert all(h.node.kind == "episode" for h in packed.included)
