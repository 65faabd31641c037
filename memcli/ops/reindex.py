"""`memcli reindex`: re-embed every node with the configured embedder, and rewrite the
full-text rows of CJK text.

The work is resumable (memcli.store.reindex_rows): the new vectors are committed a batch
at a time to a side table while the store keeps its old ones, and one transaction swaps
them in at the end. A reindex stopped by Ctrl-C, a kill or a crash leaves the store as it
was (asking it with the old model still works); the next `memcli reindex` with the same
model embeds only what is missing and reports the rest as `resumed`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TypedDict

from memcli.consolidate.words import embed_words
from memcli.llm.embedder import PIPELINE_BATCH, batched, embed_all
from memcli.models import Turn, embedding_text, turn_embedding_text
from memcli.ops.entity import restore_profiles
from memcli.progress import NoProgress, Progress
from memcli.store.reindex_rows import TARGET_KEY, WORDS_KEY, digest

if TYPE_CHECKING:
    from memcli.llm import Embedder
    from memcli.ops.base import MemoryBase
    from memcli.store.interface import Store

Row = tuple[int, str, str, str, str | None]  # id, space, kind, text, speaker


class ReindexReport(TypedDict):
    """What `memcli reindex` did."""

    nodes: int
    embedded: int  # vectors made by this run
    resumed: int  # vectors kept from a reindex to the same model that was stopped
    embedding: str  # provider:model now recorded in the store
    dim: int | None
    text_rows: int  # full-text rows of CJK text split again
    words: int  # words of turns embedded again (memcli.store.words)
    seconds: float


def reindex(mem: MemoryBase, progress: Progress | None = None) -> ReindexReport:
    """Embed all nodes of all spaces into the side table (continuing a stopped reindex to
    the same model), swap the vectors in one transaction (re-splitting the full-text rows
    of CJK text indexed before memcli split it), then embed the words of the turns again."""
    progress = progress or NoProgress()
    started = time.perf_counter()
    target = mem.embedder_identity()
    embedder = mem.load_embedder()
    report: ReindexReport = {
        "nodes": 0, "embedded": 0, "resumed": 0, "embedding": target, "dim": None,
        "text_rows": 0, "words": 0, "seconds": 0.0,
    }  # fmt: skip
    try:
        _reindex(mem, embedder, target, progress, report)
    except KeyboardInterrupt as stopped:  # Ctrl-C, SIGTERM: the batches committed stay
        stopped.fix = RESUME_FIX  # type: ignore[attr-defined]
        raise
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


#: What an interrupted reindex says to do (the CLI shows it under "interrupted").
RESUME_FIX = "run `memcli reindex` again: it resumes where this one stopped"


def _reindex(
    mem: MemoryBase,
    embedder: Embedder | None,
    target: str,
    progress: Progress,
    report: ReindexReport,
) -> None:
    """The vectors of every node (unless only words were left), then the words."""
    store = mem.store
    if store.get_meta(WORDS_KEY) == target and mem.stored_identity() == target:
        # Stopped after its swap: every node has its new vector, only words are left.
        report["dim"] = store.vector_dim()
        report["nodes"] = report["resumed"] = len(store.all_nodes_for_embedding())
    else:
        _swap(mem, embedder, target, progress, report)
    if embedder is not None:  # the words of turns, with this model too
        for space in store.word_spaces():
            report["words"] += embed_words(store, space, embedder, mem.record_embedder, progress)
    if store.get_meta(WORDS_KEY) is not None:
        with store.transaction():
            store.delete_meta(WORDS_KEY)


def _swap(
    mem: MemoryBase,
    embedder: Embedder | None,
    target: str,
    progress: Progress,
    report: ReindexReport,
) -> None:
    """Embed what the side table lacks, then swap every vector in at once."""
    store = mem.store
    rows = store.all_nodes_for_embedding()
    if embedder is not None and rows:
        if store.get_meta(TARGET_KEY) != target:  # another model's leftovers are no use
            with store.transaction():
                store.drop_reindex_vectors()
                store.set_meta(TARGET_KEY, target)
        report["resumed"], report["embedded"] = _embed_missing(store, embedder, rows, progress)
    with store.transaction():
        if embedder is not None:  # nodes another process wrote since `rows` was read
            rows = store.all_nodes_for_embedding()
            report["embedded"] += _embed_new(store, embedder, rows)
        report["text_rows"] = store.index_cjk_again(rows)
        store.drop_vectors()
        store.forget_word_vectors()
        vectors = store.reindex_vectors([r[0] for r in rows]) if embedder is not None else {}
        dim = len(next(iter(vectors.values()))) if vectors else None
        if dim:
            store.ensure_vectors(dim)
            store.put_vectors((r[0], r[1], r[2], vectors[r[0]]) for r in rows)
        restore_profiles(mem, {r[0]: r[1] for r in rows if r[2] == "entity"} if dim else {})
        store.set_meta("embedding.identity", target)
        if dim:
            store.set_meta("embedding.dim", str(dim))
        else:
            store.delete_meta("embedding.dim")
        store.drop_reindex_vectors()
        store.delete_meta(TARGET_KEY)
        if embedder is not None:
            store.set_meta(WORDS_KEY, target)
    report["nodes"], report["dim"] = len(rows), dim


def _embed_missing(
    store: Store, embedder: Embedder, rows: list[Row], progress: Progress
) -> tuple[int, int]:
    """Embed the nodes whose text the side table has no vector of, a batch per
    transaction; (how many it had already, how many were embedded now)."""
    texts = _texts(store, rows)
    digests = [digest(t) for t in texts]
    done = store.reindex_digests()
    todo = [i for i, r in enumerate(rows) if done.get(r[0]) != digests[i]]
    progress.start("re-embedding", len(rows))
    progress.advance(len(rows) - len(todo))
    for batch in batched(todo, PIPELINE_BATCH):
        vectors = embedder.embed([texts[i] for i in batch])
        with store.transaction():
            store.put_reindex_vectors(
                [(rows[i][0], digests[i], v) for i, v in zip(batch, vectors, strict=True)]
            )
        progress.advance(len(batch))
    progress.finish()
    return len(rows) - len(todo), len(todo)


def _embed_new(store: Store, embedder: Embedder, rows: list[Row]) -> int:
    """Embed, inside the swap's transaction, the nodes the side table has no vector of
    at all (written while the reindex ran); how many."""
    done = store.reindex_digests()
    if all(r[0] in done for r in rows):
        return 0
    texts = _texts(store, rows)
    todo = [i for i, r in enumerate(rows) if r[0] not in done]
    vectors = embed_all(embedder, [texts[i] for i in todo])
    store.put_reindex_vectors(
        [(rows[i][0], digest(texts[i]), v) for i, v in zip(todo, vectors, strict=True)]
    )
    return len(todo)


def _texts(store: Store, rows: list[Row]) -> list[str]:
    """The text each node is embedded from, as ingest and consolidation embed it."""
    befores = _turns_before(store, rows)
    return [
        turn_embedding_text(r[3], r[4], befores.get(r[0])) if r[2] == "episode"
        else embedding_text(r[3], r[4])
        for r in rows
    ]  # fmt: skip


def _turns_before(store: Store, rows: list[Row]) -> dict[int, Turn]:
    """The turn before each turn among `rows` in its session (its NEXT edge), as ingest
    embedded it with (memcli.models.turn_embedding_text)."""
    turns = {r[0]: (r[3], r[4]) for r in rows if r[2] == "episode"}
    out: dict[int, Turn] = {}
    ids = list(turns)
    for start in range(0, len(ids), _BATCH):
        for src, dst, _, _ in store.edge_rows(ids[start : start + _BATCH], ["NEXT"]):
            if src in turns and dst in turns:
                out[dst] = turns[src]
    return out


_BATCH = 5000  # turns whose edges are read at once
