"""What `memcli doctor`'s vectors check reads: a few stored turns, embedded again and
compared with their stored vectors (memcli.doctor.check_vectors)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcli.llm import Embedder

# The vectors check embeds this many turns again, spread evenly over the order they were
# stored in (a store used before and after an upgrade holds both kinds of vector).
SAMPLE = 8
# A stored vector and a fresh one of the same text agree at least this well (the same model
# on other hardware or another batch differs in the sixth decimal, not the third).
SAME = 0.999


def sampled_turns(store: Any) -> list[tuple[int, Any, Any]]:
    """Up to SAMPLE (turn id, turn, the turn before it) with a stored vector, spread over
    the turns of every space in the order they were stored."""
    ids = sorted(
        i for space in store.spaces() for i in store.select_nodes(space, kinds=["episode"])
    )
    if not ids:
        return []
    step = max(1, len(ids) // (4 * SAMPLE))  # four times as many: not every turn has one before
    picked = ids[::step][: 4 * SAMPLE] + ids[-1:]
    before = {dst: src for src, dst, _, _ in store.edge_rows(picked, ["NEXT"]) if dst in picked}
    vectors = store.get_vectors([i for i in picked if i in before])
    usable = [i for i in dict.fromkeys(picked) if i in before and i in vectors]
    chosen = usable[:: max(1, len(usable) // SAMPLE)][:SAMPLE]
    nodes = store.nodes_by_ids([*chosen, *(before[i] for i in chosen)])
    return [(i, nodes[i], nodes[before[i]]) for i in chosen if i in nodes and before[i] in nodes]


def vector_kinds(
    store: Any, embedder: Embedder, turns: list[tuple[int, Any, Any]]
) -> dict[str, int]:
    """How many of the sampled turns' stored vectors are the embedding of the turn with the
    turn before it (`current`), of the turn alone (`plain`), or neither (`other`). A turn
    that embeds alike both ways (the model's length limit cuts a long turn before its
    context) tells nothing and is left out."""
    import numpy as np

    from memcli.models import embedding_text, turn_embedding_text

    texts = []
    for _, turn, prev in turns:
        texts.append(turn_embedding_text(turn.text, turn.speaker, (prev.text, prev.speaker)))
        texts.append(embedding_text(turn.text, turn.speaker))
    fresh = np.asarray(embedder.embed(texts), dtype=np.float64)
    fresh /= np.maximum(np.linalg.norm(fresh, axis=1, keepdims=True), 1e-12)
    stored = store.get_vectors([i for i, _, _ in turns])
    kinds = {"current": 0, "plain": 0, "other": 0}
    for n, (i, _, _) in enumerate(turns):
        v = np.asarray(stored[i], dtype=np.float64)
        v /= max(float(np.linalg.norm(v)), 1e-12)
        if float(fresh[2 * n] @ fresh[2 * n + 1]) >= SAME:
            continue
        with_context, alone = float(fresh[2 * n] @ v), float(fresh[2 * n + 1] @ v)
        if with_context >= SAME:
            kinds["current"] += 1
        elif alone >= SAME:
            kinds["plain"] += 1
        else:
            kinds["other"] += 1
    return kinds
