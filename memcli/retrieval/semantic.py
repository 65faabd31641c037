"""`semantic`: nearest neighbours by cosine similarity of embeddings."""

from __future__ import annotations

from memcli.errors import ConfigError
from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever


def require_vectors(ctx: SearchContext) -> None:
    """Semantic search needs an embedder; say how to get one."""
    if ctx.embedder is None:
        raise ConfigError(
            "this strategy needs embeddings but embedding.provider is 'none'",
            fix="use --strategy lexical, or configure an embedder and run `memcli reindex`",
        )


@register_retriever("semantic")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """The k nodes whose embeddings are closest to the query's."""
    require_vectors(ctx)
    return ctx.hits(ctx.store.vector_search(ctx.space, ctx.query_vector(query), k, MEMORY_KINDS))
