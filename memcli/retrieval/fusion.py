"""Combining the full-text and vector signals into one similarity per node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcli.retrieval import SearchContext


def fused_similarity(
    ctx: SearchContext, query: str, pool: int, kinds: Sequence[str] | None = None
) -> dict[int, float]:
    """w·BM25/max(BM25) + (1-w)·cosine over the union of both candidate lists.

    Cosine is looked up from stored vectors for candidates only full-text found, so every
    node is scored on both signals. Without an embedder this is normalised BM25 alone.
    """
    lexical = dict(ctx.store.text_search(ctx.space, query, pool, kinds))
    top = max(lexical.values(), default=0.0)
    norm_lex = {i: s / top for i, s in lexical.items()} if top > 0 else {}
    qv = ctx.query_vector(query)
    if qv is None:
        return norm_lex
    cosine = dict(ctx.store.vector_search(ctx.space, qv, pool, kinds))
    cosine.update(similarities(ctx, qv, [i for i in norm_lex if i not in cosine]))
    w = ctx.cfg.lexical_weight
    return {
        i: w * norm_lex.get(i, 0.0) + (1.0 - w) * cosine.get(i, 0.0)
        for i in set(norm_lex) | set(cosine)
    }


def similarities(
    ctx: SearchContext, query_vector: Any, node_ids: Sequence[int]
) -> dict[int, float]:
    """Cosine similarity between the query and stored vectors of the given nodes."""
    if not node_ids:
        return {}
    vectors = ctx.store.get_vectors(node_ids)
    return {i: float(v @ query_vector) for i, v in vectors.items()}


def ranked(scores: dict[int, float]) -> list[tuple[int, float]]:
    """(id, score) best first; ties broken by id for stable output."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
