"""`memcli ask`: retrieve, pack, and (with an LLM) answer with citations."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memcli.context.pack import Packed, pack
from memcli.context.subjects import subjects_of
from memcli.errors import LLMNotConfigured, ModelOutputInvalid, UsageError
from memcli.models import Answer
from memcli.ops.answer_check import unsupported
from memcli.retrieval import SearchContext, get_retriever

#: A context too long for the model is packed again in this share of the words, down to
#: MIN_WORDS words.
SHRINK = 0.7
MIN_WORDS = 60

if TYPE_CHECKING:
    from memcli.llm import ChatModel
    from memcli.ops.answering import AnswerResult
    from memcli.ops.base import MemoryBase


#: Strategies that read the full text alone: they never embed the question nor read a
#: vector, so a store embedded by another model than the configured one answers them.
FULL_TEXT_ONLY = frozenset({"lexical"})


def search_context(
    mem: MemoryBase, explain: bool = False, strategy: str | None = None
) -> SearchContext:
    """A retrieval context over the memory's store, space, embedder and settings; with
    `explain`, strategies that can say why each hit ranked (memcli.retrieval.explain).
    EmbeddingMismatch when `strategy` compares vectors and the store's were made by another
    model than the configured one (a strategy of FULL_TEXT_ONLY gets no embedder)."""
    if strategy in FULL_TEXT_ONLY:
        embedder = None
    else:
        mem.check_embedder(lexical=True)
        embedder = mem.load_embedder()
    return SearchContext(mem.store, mem.space, embedder, mem.cfg.retrieval, explain)


def _require_chat(mem: MemoryBase) -> ChatModel:
    if mem.chat is None:
        raise LLMNotConfigured(
            "answering needs an LLM, and llm.provider is 'none'",
            fix="set llm.provider (ollama or openai) and llm.model in the config or "
            "MEMCLI_LLM_PROVIDER/MEMCLI_LLM_MODEL, or use --context-only (in Python, "
            "Memory.recall) for the packed memory",
        )
    return mem.chat


#: The most hits one question may ask for: far above any useful context, and small enough
#: that no count derived from it overflows SQLite's integers.
MAX_K = 10_000


def _check_question(question: str, k: int | None) -> None:
    """A usage error for a blank question or a `k` outside 1..MAX_K (the CLI's own rules)."""
    if not question.strip():
        raise UsageError(
            "the question is empty", fix="ask about something, e.g. 'where did we meet?'"
        )
    if k is not None and not 1 <= k <= MAX_K:
        raise UsageError(
            f"k must be from 1 to {MAX_K}, got {k}",
            fix="leave k out for retrieval.k, or pass a number in that range",
        )


def ask(
    mem: MemoryBase,
    question: str,
    *,
    strategy: str | None = None,
    k: int | None = None,
    context_only: bool = False,
    word_budget: int | None = None,
    explain: bool = False,
) -> Answer:
    """Retrieve memories for a question, pack them and, unless `context_only`, answer.

    `k` bounds both the hits returned and the hits packed; without it, `retrieval.k` hits
    are returned and the best `retrieval.pool` are packed. `word_budget` replaces
    `retrieval.word_budget`. A context too long for the model's window is packed again
    with fewer words (see `fitted_answer`); the Answer holds the one the model read. With
    `explain`, each hit says why it ranked, where the strategy can (memcli.retrieval.explain)."""
    _check_question(question, k)
    cfg = mem.cfg.retrieval
    strategy = strategy or cfg.strategy
    retrieve = get_retriever(strategy)
    chat = None if context_only else _require_chat(mem)  # before any retrieval work
    context = search_context(mem, explain, strategy)
    ranked = retrieve(context, question, k or max(cfg.k, cfg.pool))
    k = k or cfg.k
    caps = {
        "fact": cfg.max_facts,
        "reflection": cfg.max_reflections,
        "episode": cfg.max_episodes,
    }
    subjects = subjects_of(mem.store, ranked, question)
    budget = word_budget or cfg.word_budget

    def packed_in(words: int) -> Packed:
        # The derived memories' words shrink in step with the turns'.
        derived = cfg.derived_words * words // max(1, cfg.word_budget)
        return pack(ranked, words, caps, question, subjects, derived)

    packed = packed_in(budget)
    result = Answer(question, packed.context, ranked[:k], about=packed.about)
    result.packed = [h.node.node_id for h in packed.included]
    if chat is not None:
        _answer(mem, chat, result, {budget: packed}, packed_in)
    return result


def _answer(
    mem: MemoryBase,
    chat: ChatModel,
    result: Answer,
    packs: dict[int, Packed],
    packed_in: Callable[[int], Packed],
) -> None:
    """Put the model's answer, citations and usage into `result`, whose context (with its
    subject groups and packed hits) becomes the one the model read: packed again in fewer
    words (`packed_in`) while the prompt did not fit. `packs`: word budget -> its packing."""
    [(budget, packed)] = packs.items()

    def repack(words: int) -> str:
        packs[words] = packed_in(words)
        return packs[words].context

    reply, words = fitted_answer(mem, result.question, budget, packed.context, repack)
    result.context, result.about = packs[words].context, packs[words].about
    result.packed = [h.node.node_id for h in packs[words].included]
    if reply.answer is None:
        raise ModelOutputInvalid(
            f"{chat.provider}:{chat.model} gave no usable answer in {reply.attempts} "
            f"attempts ({reply.error})",
            fix="use a model that follows JSON instructions (llm.model), "
            "or --context-only to read the packed memory yourself",
        )
    result.answer, result.citations = reply.answer, reply.citations
    result.unsupported = unsupported(reply.answer, reply.citations, result.context, result.question)
    result.usage = {
        **reply.usage,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
    }


def fitted_answer(
    mem: MemoryBase,
    question: str,
    budget: int,
    context: str,
    repack: Callable[[int], str] | None = None,
) -> tuple[AnswerResult, int]:
    """`generate`, with the context packed again in fewer words (`repack(words)`) while
    the prompt does not fit the model's window; the result and the word budget used.

    Verbatim turns and derived memories are chosen again by rank, so what is left out is
    what ranked lowest; PromptTooLong when even MIN_WORDS words do not fit."""
    from memcli.llm.window import PromptTooLong

    while True:
        try:
            return generate(mem, question, context), budget
        except PromptTooLong:
            if budget <= MIN_WORDS or repack is None:
                raise
            budget = max(MIN_WORDS, int(budget * SHRINK))
            context = repack(budget)


def generate(mem: MemoryBase, question: str, context: str) -> AnswerResult:
    """The configured LLM's answer from packed memory; replies are cached in the store.

    Never raises for invalid model output: the result's `answer` is None instead.
    """
    from memcli.llm.cached import CachedChat, Usage
    from memcli.ops.answering import answer_question

    usage = Usage()  # per answer, so callers see what this one cost
    chat = CachedChat(_require_chat(mem), mem.store, usage)
    result = answer_question(chat, question, context, mem.cfg.prompts_dir)
    counts = usage.snapshot()
    result.usage = {"llm_calls": counts["llm_calls"], "cache_hits": counts["cache_hits"]}
    return result
