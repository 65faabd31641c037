"""`lexical`: FTS5 BM25 over node text, the single-signal full-text baseline."""

from __future__ import annotations

from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever


@register_retriever("lexical")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """The k nodes whose text best matches the query's words."""
    return ctx.hits(ctx.store.text_search(ctx.space, query, k, MEMORY_KINDS))
