"""`memcli ask`: retrieve, pack, and (with an LLM) answer with citations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.errors import LLMNotConfigured
from memcli.models import Answer
from memcli.retrieval import SearchContext, get_retriever
from memcli.retrieval.pack import pack

if TYPE_CHECKING:
    from memcli.ops import Memory


def search_context(mem: Memory) -> SearchContext:
    """A retrieval context over the memory's store, space, embedder and settings."""
    return SearchContext(mem.store, mem.space, mem.embedder, mem.cfg.retrieval)


def ask(
    mem: Memory,
    question: str,
    *,
    strategy: str | None = None,
    k: int | None = None,
    context_only: bool = False,
) -> Answer:
    """Retrieve memories for a question and pack them; answering needs a configured LLM."""
    cfg = mem.cfg.retrieval
    retrieve = get_retriever(strategy or cfg.strategy)
    if not context_only and mem.chat is None:
        raise LLMNotConfigured(
            "answering needs an LLM, and llm.provider is 'none'",
            fix="set llm.provider (ollama or openai) and llm.model in the config or "
            "MEMCLI_LLM_PROVIDER/MEMCLI_LLM_MODEL, or use --context-only for the packed memory",
        )
    k = k or cfg.k
    ranked = retrieve(search_context(mem), question, max(k, cfg.pool))
    caps = {
        "fact": cfg.max_facts,
        "reflection": cfg.max_reflections,
        "episode": cfg.max_episodes,
    }
    packed = pack(ranked, cfg.word_budget, caps)
    return Answer(question=question, context=packed.context, hits=ranked[:k])
