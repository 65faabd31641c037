"""Combining the full-text and vector signals into one similarity per node."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.retrieval.related import related_words
from memcli.store.vectors import KNN_MAX

if TYPE_CHECKING:
    from memcli.retrieval import SearchContext


# The full-text pass reads this many times the candidate pool: FTS5 scores every match
# anyway, and the extra rows give nodes met later through the graph their exact BM25 (or an
# upper bound). The vector pass reads just the pool: sqlite-vec's cost grows with k.
WIDE = 4


@dataclass
class Similarity:
    """Fused query similarity of nodes, able to score more nodes on the same scale.

    `lexical` and `cosine` hold every row the wide first pass returned; `scores` the fused
    similarity of the candidates and of nodes scored later. BM25 is divided by the best
    candidate's (`bm25_top`), so nodes scored later (found through the graph) compare.
    """

    query: str
    scores: dict[int, float] = field(default_factory=dict)
    bm25_top: float = 0.0
    query_vector: Any = None
    lexical_weight: float = 0.5
    lexical: dict[int, float] = field(default_factory=dict)
    cosine: dict[int, float] = field(default_factory=dict)
    lexical_floor: float = 0.0  # BM25 of any node outside `lexical` is at most this
    cosine_floor: float = 0.0  # cosine of any node outside `cosine` is at most this
    kinds: dict[int, str] = field(default_factory=dict)  # kind of every node read so far
    # For explanations (memcli.retrieval.explain): the related words' part of `lexical`,
    # and the turn each node inherited its similarity from (inherit_replies).
    related: dict[int, float] = field(default_factory=dict)
    inherited: dict[int, int] = field(default_factory=dict)

    def extend(self, ctx: SearchContext, node_ids: Iterable[int]) -> dict[int, float]:
        """Fused similarity of nodes not yet scored (computed on demand), added to `scores`.

        BM25 comes from the wide first pass (a node outside it counts 0: it ranks below
        every node read); cosine from the first pass, else from the node's stored vector.
        """
        missing = [i for i in dict.fromkeys(node_ids) if i not in self.scores]
        if not missing:
            return {}
        if self.query_vector is not None:
            unknown = [i for i in missing if i not in self.cosine]
            self.cosine.update(similarities(ctx, self.query_vector, unknown))
        added = {i: self._fuse(self.lexical.get(i, 0.0), self.cosine.get(i)) for i in missing}
        self.scores.update(added)
        return added

    def bound(self, node_id: int) -> float:
        """The highest fused similarity a node not yet scored can have."""
        if node_id in self.scores:
            return self.scores[node_id]
        bm25 = self.lexical.get(node_id, self.lexical_floor)
        # A node without a stored vector scores cosine 0 (see _fuse), which may exceed a
        # negative floor.
        return self._fuse(bm25, self.cosine.get(node_id, max(self.cosine_floor, 0.0)))

    def parts(self, node_id: int) -> dict[str, float]:
        """A scored node's similarity split into its signals: full-text, related words and
        vector (as fused), and what it inherited from a neighbouring turn."""
        bm25, cosine = self.lexical.get(node_id, 0.0), self.cosine.get(node_id)
        related = self.related.get(node_id, 0.0)
        scale = 1.0 / self.bm25_top if self.bm25_top > 0 else 0.0
        w = 1.0 if self.query_vector is None else self.lexical_weight
        out = {"fulltext": w * (bm25 - related) * scale, "related": w * related * scale}
        if self.query_vector is not None:
            out["vector"] = (1.0 - w) * (cosine or 0.0)
        if node_id in self.inherited:
            out["reply"] = self.scores[node_id] - self._fuse(bm25, cosine)
        return out

    def _fuse(self, bm25: float, cosine: float | None) -> float:
        lex = bm25 / self.bm25_top if self.bm25_top > 0 else 0.0
        if self.query_vector is None:
            return lex
        w = self.lexical_weight
        return w * lex + (1.0 - w) * (cosine or 0.0)


def _best_per_group(
    rows: dict[int, float], kinds: dict[int, str], groups: Sequence[tuple[Any, int]]
) -> set[int]:
    """The ids of the best `pool` rows of each group of kinds."""
    chosen: set[int] = set()
    for group, pool in groups:
        inside = [(i, v) for i, v in ranked(rows) if group is None or kinds.get(i) in group]
        chosen.update(i for i, _ in inside[:pool])
    return chosen


def fused_groups(
    ctx: SearchContext, query: str, groups: Sequence[tuple[Sequence[str] | None, int]]
) -> Similarity:
    """w·BM25/max(BM25) + (1-w)·cosine over the union of both candidate lists, with its own
    candidate pool for each group of kinds, on one scale.

    Cosine is looked up from stored vectors for candidates only full-text found, so every
    node is scored on both signals. Without an embedder this is normalised BM25 alone.

    One full-text query (WIDE times the pools) and one vector query (the pools) over all
    the groups' kinds; each group then takes its best `pool` candidates from each signal.
    """
    return _scored(ctx, _search(ctx, query, groups), groups)


def fused_each(
    ctx: SearchContext, query: str, groups: Sequence[tuple[Sequence[str] | None, int]]
) -> list[Similarity]:
    """Like `fused_groups`, but one Similarity per group, each on its own scale (BM25
    divided by the group's best), from the same single full-text and vector queries."""
    found = _search(ctx, query, groups)
    return [_scored(ctx, found, [group]) for group in groups]


def _search(
    ctx: SearchContext, query: str, groups: Sequence[tuple[Sequence[str] | None, int]]
) -> Similarity:
    """The wide first pass over all the groups' kinds, nothing scored yet."""
    union = (
        None
        if any(g is None for g, _ in groups)
        else sorted({k for g, _ in groups for k in g or ()})
    )
    pools = sum(pool for _, pool in groups)
    related = related_words(ctx, query)  # first: it embeds its words with the query
    sim = Similarity(query, query_vector=ctx.query_vector(query))
    sim.lexical_weight = ctx.cfg.lexical_weight
    sim.lexical = dict(ctx.store.text_search(ctx.space, query, WIDE * pools, union))
    if len(sim.lexical) >= WIDE * pools:
        sim.lexical_floor = min(sim.lexical.values())
    _add_related(ctx, sim, related, WIDE * pools, union)
    if sim.query_vector is not None:
        sim.cosine = dict(ctx.store.vector_search(ctx.space, sim.query_vector, pools, union))
        if len(sim.cosine) >= min(pools, KNN_MAX):
            sim.cosine_floor = min(sim.cosine.values())
    sim.kinds = ctx.store.kinds_of([*sim.lexical, *sim.cosine])
    return sim


def _add_related(
    ctx: SearchContext, sim: Similarity, found: list[str], limit: int, kinds: Sequence[str] | None
) -> None:
    """Add `related_weight` × the BM25 of the query's related words (memcli.retrieval.
    related) to the full-text scores."""
    if not found:
        return
    weight = ctx.cfg.related_weight
    rows = ctx.store.text_search(ctx.space, " ".join(found), limit, kinds)
    for node_id, bm25 in rows:
        sim.lexical[node_id] = sim.lexical.get(node_id, 0.0) + weight * bm25
        sim.related[node_id] = sim.related.get(node_id, 0.0) + weight * bm25
    if len(rows) >= limit:  # a node outside both lists scores at most both floors
        sim.lexical_floor += weight * min(bm25 for _, bm25 in rows)


def _scored(
    ctx: SearchContext, found: Similarity, groups: Sequence[tuple[Sequence[str] | None, int]]
) -> Similarity:
    """The groups' candidates from a first pass, scored on one scale (shared rows)."""
    sim = dataclasses.replace(found, scores={}, inherited={})
    lexical = _best_per_group(sim.lexical, sim.kinds, groups)
    candidates = lexical | _best_per_group(sim.cosine, sim.kinds, groups)
    sim.bm25_top = max((sim.lexical[i] for i in lexical), default=0.0)
    sim.extend(ctx, candidates)
    return sim


def similarities(
    ctx: SearchContext, query_vector: Any, node_ids: Sequence[int]
) -> dict[int, float]:
    """Cosine similarity between the query and stored vectors of the given nodes."""
    if not node_ids:
        return {}
    vectors = ctx.store.get_vectors(node_ids)
    return {i: float(v @ query_vector) for i, v in vectors.items()}


def ranked(scores: dict[int, float]) -> list[tuple[int, float]]:
    """(id, score) best first; ties broken by id for stable output."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def top(scores: dict[int, float], n: int) -> list[tuple[int, float]]:
    """The n best (id, score) pairs with a positive score."""
    return [(i, s) for i, s in ranked(scores)[:n] if s > 0]


def inherit_replies(
    ctx: SearchContext, sim: Similarity, among: int, share: float, replied_share: float = 0.0
) -> None:
    """Let neighbouring turns inherit each other's similarity along the conversation.

    A question and its answer sit in consecutive turns, and the answer often repeats none of
    the question's words ("What are you baking?" / "A rye loaf."). So when one of the
    best `among` candidates is a turn that asks something, the next turn of its session
    (its NEXT neighbour) scores at least share × the question's similarity.

    The other way round, a reply often names what the turn before it said ("Rome? Lucky
    you!" after "I took a short trip last week"): the statement is where it was said, yet
    only the reply matches. So the turn before each of the best candidates scores at least
    replied_share × that candidate's similarity (as it was before any inheritance).
    """
    best = [i for i, _ in top(sim.scores, among)]
    if not best or (share <= 0 and replied_share <= 0):
        return
    turns = [(a, b) for a, b, _, _ in ctx.store.edge_rows(best, ["NEXT"])]  # a, then b
    if replied_share > 0:
        chosen = set(best)
        before = [(p, r) for p, r in turns if r in chosen]
        sim.kinds.update(dict.fromkeys((p for p, _ in before), "episode"))  # NEXT joins turns
        sim.extend(ctx, [p for p, _ in before])
        own = {r: sim.scores[r] for _, r in before}
        for earlier, reply in before:
            if replied_share * own[reply] > sim.scores[earlier]:
                sim.scores[earlier] = replied_share * own[reply]
                sim.inherited[earlier] = reply
    if share <= 0:
        return
    nodes = ctx.store.nodes_by_ids(best)
    asking = {i for i in best if nodes[i].kind == "episode" and "?" in nodes[i].text}
    replies = [(q, a) for q, a in turns if q in asking]
    sim.kinds.update(dict.fromkeys((a for _, a in replies), "episode"))  # NEXT joins turns
    sim.extend(ctx, [a for _, a in replies])
    for question, answer in replies:
        if share * sim.scores[question] > sim.scores[answer]:
            sim.scores[answer] = share * sim.scores[question]
            sim.inherited[answer] = question
