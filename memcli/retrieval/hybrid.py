"""`hybrid` (default): the first pass's signals, added up with weights fitted on three kinds
of conversation.

Its pipeline, every number and switch of it a parameter (memcli.retrieval.params.
HybridParams, overridable under `retrieval.tuning.hybrid`):

1. The speakers the question names (by name, or by what the others call them) leave the
   searched text and become its role signal (memcli.retrieval.people; `people_names`,
   `people_aliases`, `alias_*`).
2. One first pass (memcli.retrieval.firstpass): BM25 of the question's words per column of
   the index and of its related words, cosine; its candidates (`candidates`, `wide`,
   `related_words`, `related_similarity`, `related_share`).
3. Each candidate's signals, as declared (memcli.retrieval.signals.SIGNALS), and its
   score Σ weight × signal (memcli.retrieval.relevance). The weights are fields named
   after the signals, their defaults the declared ones: a listwise logistic model fitted
   on the dev sets of three genres by tests/bench/rank_fit.py (docs/retrieval.md says how
   and how well).
4. The question's shape (memcli.retrieval.shapes, a switch per rule: `shape_*`) decides
   the rest: a broad question is searched by its topic alone, with `broad_pool` times the
   candidates, and one about an order or a summary is spread over the sessions (memcli.
   retrieval.spread); a summary weighs both sides of a chat alike. A question about an
   enumeration ("for A, B, and C") is also searched item by item, and the rankings are
   merged in rounds (memcli.retrieval.spread.interleave).
"""

from __future__ import annotations

from collections.abc import Sequence

from memcli.models import Hit
from memcli.retrieval import Explanation, Reasons, SearchContext, register_retriever
from memcli.retrieval.firstpass import ranked
from memcli.retrieval.params import HybridParams
from memcli.retrieval.people import People, named_speakers
from memcli.retrieval.relevance import Relevance
from memcli.retrieval.shapes import Shape
from memcli.retrieval.spread import interleave, spread


def scored(
    ctx: SearchContext, question: str, people: People, text: str, size: int, roles: bool,
    explain: Explanation | None = None,
) -> dict[int, float]:  # fmt: skip
    """Σ weight × signal of the memories the searches for `text` find (`size` from each
    signal; memcli.retrieval.relevance), with or without the role signal; with `explain`,
    each score's parts are noted there."""
    found = Relevance.of(ctx, question, size, people=people, text=text, roles=roles)
    if not found.matched:
        return {}
    if explain is not None:
        explain.score = found.scores
        explain.resolve = lambda ids: _reasons(found, ids)
    return found.scores


def _reasons(found: Relevance, ids: Sequence[int]) -> Reasons:
    """Each signal's part of these memories' scores (weight × signal, 0s left out)."""
    weights = found.weights
    why = {i: {s: weights[s] * v for s, v in found.rows[i].items() if weights[s] * v} for i in ids}
    return why, {}


@register_retriever("hybrid", HybridParams)
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Memories ranked by the weighted sum of their signals; for a broad question, searched
    by its topic and spread over the conversation's sessions; for an enumeration, searched
    item by item as well."""
    params = ctx.params("hybrid", HybridParams)
    people = named_speakers(ctx, query, params)
    shape = Shape.of(people.query, params)
    size = max(params.candidates, k)
    notes: list[Explanation] = []

    def scores(text: str, width: int, roles: bool = True) -> dict[int, float]:
        note = Explanation() if ctx.explain else None  # only when asked: it costs a little
        notes.extend([note] if note is not None else [])
        return scored(ctx, query, people, text, width, roles, note)

    if not shape.broad:
        order = ranked(scores(people.query, size))
    else:
        found = scores(shape.topic, params.broad_pool * size, roles=not shape.summary)
        order = ranked(found)
        if shape.ordered or shape.summary:
            order = spread(order, ctx.store.nodes_by_ids(found))
    if shape.parts:
        order = interleave([order, *(ranked(scores(part, size)) for part in shape.parts)])
    if ctx.explain:
        ctx.explained(order[:k], notes)
    return ctx.hits(order, k)
