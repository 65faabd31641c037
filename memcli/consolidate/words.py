"""Stage `words`: embed the words of the turns that have no vector yet (no LLM).

Retrieval looks a question's words up among them to search for related words too
(memcli.retrieval.related). A word is embedded once, in batches of BATCH words, each
batch stored in its own transaction (one unit of work for `--limit`); a word that
consolidation has not reached yet is simply not used as a related word. An import embeds
the words it brings the same way (memcli.ops.transfer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memcli.consolidate.stage import Stage
from memcli.progress import Progress

if TYPE_CHECKING:
    from memcli.llm import Embedder
    from memcli.store import Store

BATCH = 512


def run(stage: Stage) -> None:
    job = stage.job
    embedder = job.ctx.load_embedder()
    if embedder is None:
        stage.report.reason = "embeddings are off (embedding.provider none)"
        return

    def counted(words: int) -> None:
        stage.report.items += 1
        stage.count("words", words)

    embed_words(job.store, job.space, embedder, job.ctx.record_embedder, job.progress,
                stage.budget_left, counted)  # fmt: skip
    stage.report.pending = job.store.count_unembedded_words(job.space)


def embed_words(
    store: Store,
    space: str,
    embedder: Embedder,
    record_embedder: Callable[[int | None], None],
    progress: Progress,
    go_on: Callable[[], bool] = lambda: True,
    done: Callable[[int], Any] = lambda words: None,
    among: Sequence[str] | None = None,
) -> int:
    """Embed the space's words that have no vector (only those `among` these words, when
    given), a batch per transaction, while `go_on()`; `done(n)` after each batch. Returns
    how many were embedded."""
    total = 0
    progress.start("embedding words", store.count_unembedded_words(space, among))
    while go_on():
        todo = store.unembedded_words(space, BATCH, among)
        if not todo:
            break
        vectors = embedder.embed(todo)
        with store.transaction():
            store.put_word_vectors(space, list(zip(todo, vectors, strict=True)))
            record_embedder(len(vectors[0]))
        total += len(todo)
        done(len(todo))
        progress.advance(len(todo))
    progress.finish()
    return total
