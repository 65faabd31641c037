"""`memcli reindex`: re-embed every node with the configured embedder, in place, and
rewrite the full-text rows of CJK text."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TypedDict

from memcli.consolidate.words import embed_words
from memcli.llm.embedder import embed_all
from memcli.models import Turn, embedding_text, turn_embedding_text
from memcli.ops.entity import restore_profiles
from memcli.progress import NoProgress, Progress

if TYPE_CHECKING:
    from memcli.ops.base import MemoryBase
    from memcli.store.interface import Store


class ReindexReport(TypedDict):
    """What `memcli reindex` did."""

    nodes: int
    embedded: int
    embedding: str  # provider:model now recorded in the store
    dim: int | None
    text_rows: int  # full-text rows of CJK text split again
    words: int  # words of turns embedded again (memcli.store.words)
    seconds: float


def reindex(mem: MemoryBase, progress: Progress | None = None) -> ReindexReport:
    """Embed all nodes of all spaces, then swap the vector table in one transaction (and
    re-split the full-text rows of CJK text indexed before memcli split it), then embed
    the words of the turns again."""
    progress = progress or NoProgress()
    started = time.perf_counter()
    store = mem.store
    rows = store.all_nodes_for_embedding()
    embedder = mem.load_embedder()
    vectors: list[Any] = []
    if embedder is not None and rows:
        progress.start("re-embedding", len(rows))
        befores = _turns_before(store, rows)
        texts = [
            turn_embedding_text(r[3], r[4], befores.get(r[0])) if r[2] == "episode"
            else embedding_text(r[3], r[4])
            for r in rows
        ]  # fmt: skip
        vectors = embed_all(embedder, texts, progress.advance)
        progress.finish()
    with store.transaction():
        text_rows = store.index_cjk_again(rows)
        store.drop_vectors()
        store.forget_word_vectors()
        dim = len(vectors[0]) if vectors else None
        if dim:
            store.ensure_vectors(dim)
            store.put_vectors((r[0], r[1], r[2], v) for r, v in zip(rows, vectors, strict=True))
        restore_profiles(mem, {r[0]: r[1] for r in rows if r[2] == "entity"} if dim else {})
        store.set_meta("embedding.identity", mem.embedder_identity())
        if dim:
            store.set_meta("embedding.dim", str(dim))
        else:
            store.delete_meta("embedding.dim")
    words = 0
    if embedder is not None:  # the words of turns, with this model too
        for space in store.word_spaces():
            words += embed_words(store, space, embedder, mem.record_embedder, progress)
    return {
        "nodes": len(rows),
        "embedded": len(vectors),
        "embedding": mem.embedder_identity(),
        "dim": dim,
        "text_rows": text_rows,
        "words": words,
        "seconds": round(time.perf_counter() - started, 3),
    }


def _turns_before(
    store: Store, rows: list[tuple[int, str, str, str, str | None]]
) -> dict[int, Turn]:
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
