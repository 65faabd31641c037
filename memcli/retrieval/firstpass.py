"""The first pass every strategy shares: what a question's two searches find, signal by signal.

One full-text query (the question's words, BM25 per column of the index: the turn's own
words, its speaker, the opening words of the turns before it) reads `wide` times the
candidate pool; a second one searches the question's related words (memcli.retrieval.
related); one vector query reads the pool by cosine. The candidates of each group of kinds
are its best `pool` rows by weighted BM25 plus its best `pool` by cosine. Every signal is
kept apart (strategies weigh them their own way: memcli.retrieval.signals), and any other
node can be scored later on the same scale (`extend`): its BM25 comes from the wide rows
(a node outside them counts 0, below every row read), its cosine from its stored vector.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.retrieval.related import related_words
from memcli.store.search import KNN_MAX

if TYPE_CHECKING:
    from memcli.retrieval import SearchContext


@dataclass(frozen=True)
class FirstPassParams:
    """The numbers of the first pass every strategy shares (part of `hybrid`'s parameters,
    memcli.retrieval.params.HybridParams)."""

    candidates: int = 50  # best memories taken from each signal (BM25, cosine)
    related_words: int = 3  # per question word, its nearest words among the turns' (0: off)
    related_similarity: float = 0.5  # least cosine between a question word and a related one
    # The full-text pass reads this many times the candidate pool: FTS5 scores every match
    # anyway, and the extra rows give nodes met later (neighbouring turns, the graph) their
    # exact BM25. The vector pass reads just the pool: sqlite-vec's cost grows with k.
    wide: int = 4
    # Choosing candidates (and in a node's plain similarity), the related words' BM25 counts
    # this much beside the question's own words': they are guesses, often a near word
    # rather than the same thing.
    related_share: float = 0.5


Groups = Sequence[tuple[Sequence[str] | None, int]]  # (kinds or None for any, pool size)


@dataclass
class FirstPass:
    """One question's raw signals for every node read so far (BM25 higher is better)."""

    query: str
    vector: Any = None
    lexical: dict[int, float] = field(default_factory=dict)  # weighted BM25, as ranked
    words: dict[int, float] = field(default_factory=dict)  # BM25 of the turn's own text
    speaker: dict[int, float] = field(default_factory=dict)  # ... of its speaker's name
    context: dict[int, float] = field(default_factory=dict)  # ... of the turns before it
    related: dict[int, float] = field(default_factory=dict)  # BM25 of the related words
    cosine: dict[int, float] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    candidates: dict[int, None] = field(default_factory=dict)  # in first-pass order
    lexical_floor: float = 0.0  # weighted BM25 of a node outside `lexical` is at most this
    cosine_floor: float = 0.0  # cosine of a node outside `cosine` is at most this
    # (shift, stretch): the model's cosines put on all-MiniLM-L6-v2's scale, on which the
    # default's weights were fitted (memcli.llm.embedder.BaseEmbedder.cosine_scale)
    cosine_scale: tuple[float, float] = (0.0, 1.0)

    def common(self, cosine: float) -> float:
        """A cosine of this model on the common scale (unchanged for MiniLM)."""
        shift, stretch = self.cosine_scale
        return (cosine - shift) * stretch if self.cosine_scale != (0.0, 1.0) else cosine

    def scale(self, kinds: Iterable[str] | None = None) -> float:
        """The best weighted BM25 among the nodes of these kinds (all when None): the
        unit BM25 is divided by, so that it compares across questions (1 when none)."""
        wanted = None if kinds is None else set(kinds)
        best = max(
            (s for i, s in self.lexical.items() if wanted is None or self.kinds.get(i) in wanted),
            default=0.0,
        )
        return best if best > 0 else 1.0

    def extend(self, ctx: SearchContext, node_ids: Iterable[int]) -> list[int]:
        """Read the cosine and kind of nodes not read yet; returns the ids given, deduplicated."""
        ids = list(dict.fromkeys(node_ids))
        if self.vector is not None:
            unknown = [i for i in ids if i not in self.cosine]
            if unknown:
                vectors = ctx.store.get_vectors(unknown)
                self.cosine.update(
                    {i: self.common(float(v @ self.vector)) for i, v in vectors.items()}
                )
        unseen = [i for i in ids if i not in self.kinds]
        if unseen:
            self.kinds.update(ctx.store.kinds_of(unseen))
        return ids


def first_pass(
    ctx: SearchContext, query: str, groups: Groups, params: FirstPassParams | None = None
) -> FirstPass:
    """The question's searches over the groups' kinds, and each group's candidates."""
    params = params or FirstPassParams()
    kinds = (
        None
        if any(g is None for g, _ in groups)
        else sorted({k for g, _ in groups for k in g or ()})
    )
    wide = params.wide * sum(pool for _, pool in groups)
    # First: it embeds its words with the query, in one model call.
    related = related_words(ctx, query, params.related_words, params.related_similarity)
    found = FirstPass(query, vector=ctx.query_vector(query))
    found.cosine_scale = getattr(ctx.embedder, "cosine_scale", (0.0, 1.0))
    rows = ctx.store.text_search_columns(ctx.space, query, wide, kinds)
    for node_id, total, text, speaker, context in rows:
        found.lexical[node_id] = total
        found.words[node_id], found.speaker[node_id], found.context[node_id] = (
            text,
            speaker,
            context,
        )
    if len(rows) >= wide:
        found.lexical_floor = min(found.lexical.values())
    if related:
        _add_related(ctx, found, " ".join(related), wide, kinds, params.related_share)
    if found.vector is not None:
        knn = ctx.store.vector_search(ctx.space, found.vector, sum(p for _, p in groups), kinds)
        found.cosine = {i: found.common(c) for i, c in knn}
        if len(found.cosine) >= min(sum(p for _, p in groups), KNN_MAX):
            found.cosine_floor = min(found.cosine.values())
    found.kinds = ctx.store.kinds_of([*found.lexical, *found.related, *found.cosine])
    lexical = {
        i: found.lexical.get(i, 0.0) + params.related_share * found.related.get(i, 0.0)
        for i in found.kinds
    }
    for group, pool in groups:
        for signal in (lexical, found.cosine):
            inside = [i for i, s in ranked(signal) if group is None or found.kinds.get(i) in group]
            found.candidates.update(dict.fromkeys(inside[:pool]))
    found.extend(ctx, found.candidates)
    return found


def _add_related(
    ctx: SearchContext, found: FirstPass, words: str, limit: int, kinds: Sequence[str] | None,
    share: float,
) -> None:  # fmt: skip
    """The BM25 of the related words (memcli.retrieval.related), counted `share` as much
    as the question's own words' in the floor."""
    rows = ctx.store.text_search(ctx.space, words, limit, kinds)
    for node_id, bm25 in rows:
        found.related[node_id] = bm25
    if len(rows) >= limit:  # a node outside both lists scores at most both floors
        found.lexical_floor += share * min(bm25 for _, bm25 in rows)


def ranked(scores: dict[int, float]) -> list[tuple[int, float]]:
    """(id, score) best first; ties broken by id for stable output."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def similarities(ctx: SearchContext, vector: Any, node_ids: Sequence[int]) -> dict[int, float]:
    """Cosine between a query vector and the stored vectors of the given nodes."""
    if not node_ids:
        return {}
    return {i: float(v @ vector) for i, v in ctx.store.get_vectors(node_ids).items()}
