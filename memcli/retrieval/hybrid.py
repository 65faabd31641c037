"""`hybrid`: full-text and vector candidates merged by reciprocal rank fusion."""

from __future__ import annotations

from memcli.models import Hit
from memcli.retrieval import SearchContext, register_retriever
from memcli.retrieval.fusion import reciprocal_rank_fusion


@register_retriever("hybrid")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """BM25 and cosine rankings fused; falls back to BM25 alone without embeddings."""
    pool = max(ctx.cfg.candidates, k)
    lexical = ctx.store.text_search(ctx.space, query, pool)
    if ctx.embedder is None:
        return ctx.hits(lexical, k)
    semantic = ctx.store.vector_search(ctx.space, ctx.query_vector(query), pool)
    fused = reciprocal_rank_fusion([lexical, semantic], ctx.cfg.rrf_k)
    return ctx.hits(fused, k)
