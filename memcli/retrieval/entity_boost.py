"""Entity neighbourhood for the default strategy: memories that mention what the question
is about.

The question is matched against the space's entities (named things, see
memcli.consolidate.entities) by the same fused full-text and vector similarity as memories:
a question that writes a name matches that entity lexically; one that asks for a kind of
thing ("which cities", "what library") reaches the entities whose names or descriptions
embed close to it. Each matched entity is weighed by its specificity, the inverse document
frequency of its mentions (a name said in every other turn tells little), and each memory
mentioning it gains `entity_weight` × the best such entity score, as a candidate when the
first pass missed it. A space without entities is scored exactly as before.
"""

from __future__ import annotations

import math

from memcli.retrieval import MEMORY_KINDS, SearchContext
from memcli.retrieval.fusion import Similarity, fused_groups, top
from memcli.retrieval.topic import TopicContext

ENTITY = ("entity",)


def entity_scores(ctx: SearchContext, query: str) -> dict[int, float]:
    """Matched entities -> similarity × specificity, the best `entity_seeds` of them."""
    cfg = ctx.cfg
    if not ctx.store.kinds_present(ctx.space, ENTITY):
        return {}
    sim = fused_groups(ctx, query, [(ENTITY, cfg.entity_seeds * 4)])
    found = {i: s for i, s in sim.scores.items() if s >= cfg.entity_min_similarity}
    if not found:
        return {}
    turns = max(1, ctx.store.count_nodes(ctx.space).get("episode", 1))
    degree = ctx.store.degrees(list(found))
    scored = {
        i: s * max(0.0, math.log((turns + 1) / (degree[i] + 1)) / math.log(turns + 1))
        for i, s in found.items()
    }
    return dict(top(scored, cfg.entity_seeds))


def add_entity_neighbours(
    ctx: SearchContext, query: str, sim: Similarity, base: dict[int, float], topic: TopicContext
) -> None:
    """Add `entity_weight` × the best matched entity's score to each memory that mentions it
    (in `base`, the normalised similarities plus topic bonus); memories not yet scored are
    scored first (similarity and topic bonus), as the first pass would have."""
    weight = ctx.cfg.entity_weight
    if weight <= 0:
        return
    entities = entity_scores(ctx, query)
    if not entities:
        return
    best: dict[int, float] = {}
    for src, dst, _, _ in ctx.store.edge_rows(list(entities), ["MENTIONS"]):
        if dst in entities:
            best[src] = max(best.get(src, 0.0), entities[dst])
    kinds = ctx.store.kinds_of([i for i in best if i not in sim.kinds])
    sim.kinds.update(kinds)
    best = {i: s for i, s in best.items() if sim.kinds.get(i) in MEMORY_KINDS}
    _score_new(ctx, sim, base, topic, [i for i in best if i not in base])
    for node, score in best.items():
        base[node] = base.get(node, 0.0) + weight * score


def _score_new(
    ctx: SearchContext,
    sim: Similarity,
    base: dict[int, float],
    topic: TopicContext,
    new: list[int],
) -> None:
    """Normalised similarity plus topic bonus of memories the first pass did not score."""
    if not new:
        return
    top_sim = max(sim.scores.values())
    sim.extend(ctx, new)
    own = {i: max(sim.scores[i], 0.0) / top_sim for i in new}
    bonus = topic.bonus(ctx, dict(own))
    for i, s in own.items():
        base[i] = s + bonus.get(i, 0.0)
