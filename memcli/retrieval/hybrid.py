"""`hybrid`: full-text and vector similarity fused into one score."""

from __future__ import annotations

from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.fusion import fused_similarity, ranked


@register_retriever("hybrid")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Nodes ranked by normalised BM25 and cosine similarity combined."""
    scores = fused_similarity(ctx, query, max(ctx.cfg.candidates, k), MEMORY_KINDS)
    return ctx.hits(ranked(scores), k)
