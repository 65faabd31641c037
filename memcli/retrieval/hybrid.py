"""`hybrid` (default, GAAMA): fused similarity plus Personalized PageRank on a local subgraph.

1. Candidates from full-text (BM25) and vector search, fused into one similarity; a turn
   that answers a candidate question inherits part of the question's similarity, and the
   turn a candidate replies to part of the candidate's.
2. Each turn gains `topic_weight` × its topic segment's similarity (memcli.retrieval.topic).
3. The best `seeds` candidates seed PageRank, weighted by their score squared.
4. The seeds' neighbourhood to `expand_depth` hops is read from the store as a local graph.
5. PageRank with edge-type weights and hub dampening runs on that graph.
6. Score = (similarity + topic bonus + ppr_weight·PageRank) × GAM's time, role and rule
   cues (memcli.retrieval.cues), similarity and PageRank max-normalised (similarity by the
   best candidate's); a node found only through the graph gets its similarity computed on
   demand whenever it could still make the top k.
7. The question's shape (memcli.retrieval.shapes) decides the rest: a broad question is
   searched by its topic alone, with twice the candidates, and one about an order or a
   summary is spread over the sessions (memcli.retrieval.spread); a summary weighs both
   sides of a chat alike. A question about an enumeration ("for A, B, and C") is also
   searched item by item, and the rankings are merged in rounds (memcli.retrieval.spread.
   interleave). Standing rules the question falls under lead the results
   (memcli.retrieval.rules).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from memcli.graph import LocalGraph, expand, max_normalised, personalized_pagerank
from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.cues import Cues
from memcli.retrieval.explain import Explanation, Reasons, paths, with_cues
from memcli.retrieval.fusion import Similarity, inherit_replies, ranked, top
from memcli.retrieval.rules import with_rules
from memcli.retrieval.shapes import Shape
from memcli.retrieval.spread import interleave, spread
from memcli.retrieval.topic import TopicContext, memories_in_topics


def graph_scores(
    ctx: SearchContext,
    query: str,
    pool: int,
    k: int,
    question: str | None = None,
    roles: bool = True,
    explain: Explanation | None = None,
) -> dict[int, float]:
    """(Similarity + topic bonus + weighted PageRank) × cues of the memories the query
    reaches, exact for the top k; the cues read `question` (default: the query), the
    role cue only when `roles`. With `explain`, each score's parts are noted there."""
    cfg = ctx.cfg
    # Organisers (segments, concepts) are reached through the graph rather than seeded:
    # their summaries and labels would otherwise take candidate slots from memories.
    sim, topic = memories_in_topics(ctx, query, MEMORY_KINDS, pool)
    inherit_replies(ctx, sim, cfg.seeds, cfg.reply_share, cfg.replied_share)
    if not any(s > 0 for s in sim.scores.values()):
        return {}
    top_sim = max(sim.scores.values())
    base = {i: max(s, 0.0) / top_sim for i, s in sim.scores.items()}
    for i, extra in topic.bonus(ctx, dict(base)).items():
        base[i] += extra
    seeds = top(base, cfg.seeds)
    graph, ppr = _pagerank(ctx, seeds)
    sim.kinds.update(ctx.store.kinds_of([n for n in graph.nodes if n not in sim.kinds]))
    nodes = ctx.store.nodes_by_ids(i for i in base if sim.kinds.get(i) in MEMORY_KINDS)
    cues = Cues.of(
        question or query, nodes.values(), beta_time=cfg.beta_time,
        beta_role=cfg.beta_role if roles else 1.0, beta_rule=cfg.beta_rule,
    )  # fmt: skip
    memories = {
        i: (base[i] + cfg.ppr_weight * ppr.get(i, 0.0)) * cues.factor(node)
        for i, node in nodes.items()
    }
    # The rule cue is for candidates: rules the query does not reach come by the rules
    # channel (memcli.retrieval.rules), and a lower ceiling keeps graph-only reads few.
    rest = dataclasses.replace(cues, beta_rule=1.0)
    memories.update(_graph_only(ctx, sim, topic, rest, graph, ppr, memories, k))
    if explain is not None:
        used = _Direct(sim, topic, ppr, cues, rest, set(nodes), top_sim)
        explain.score = memories
        explain.resolve = lambda ids: _explain(ctx, used, ids, graph, [i for i, _ in seeds])
    return memories


@dataclasses.dataclass
class _Direct:
    """What one scoring pass used, kept to explain its scores."""

    sim: Similarity
    topic: TopicContext
    ppr: dict[int, float]
    cues: Cues  # for the candidates
    rest: Cues  # for memories met only through the graph
    candidates: set[int]
    top_sim: float


def _explain(
    ctx: SearchContext, used: _Direct, ids: Sequence[int], graph: LocalGraph, seeds: list[int]
) -> Reasons:
    """The scores of these memories as their parts (memcli.retrieval.explain), and the
    path that brought each one that was not a direct match. Changes no score."""
    own = {i: max(used.sim.scores[i], 0.0) / used.top_sim for i in ids}
    topic = used.topic.bonus(ctx, dict(own))
    why, via = {}, {}
    for i, node in ctx.store.nodes_by_ids(ids).items():
        raw = used.sim.scores[i]
        parts = {k: v / used.top_sim for k, v in used.sim.parts(i).items()} if raw > 0 else {}
        parts["topic"] = topic.get(i, 0.0)
        parts["pagerank"] = ctx.cfg.ppr_weight * used.ppr.get(i, 0.0)
        cues = used.cues if i in used.candidates else used.rest
        why[i] = with_cues(parts, cues.fired(node))
        if i in used.sim.inherited:
            via[i] = [used.sim.inherited[i], i]
    via.update(paths(graph, seeds, [i for i in ids if i not in used.candidates]))
    return why, via


def _pagerank(
    ctx: SearchContext, seeds: list[tuple[int, float]]
) -> tuple[LocalGraph, dict[int, float]]:
    """The seeds' local graph, and PageRank on it (max-normalised) from the seeds weighted
    by their score squared."""
    cfg = ctx.cfg
    graph = expand(
        ctx.store,
        [i for i, _ in seeds],
        cfg.expand_depth,
        hub_threshold=cfg.hub_threshold,
        max_nodes=cfg.max_subgraph,
    )
    ppr = personalized_pagerank(
        graph,
        {i: s * s for i, s in seeds},
        type_weights=cfg.type_weights(),
        damping=cfg.damping,
        hub_threshold=cfg.hub_threshold,
    )
    return graph, max_normalised(ppr)


def _graph_only(
    ctx: SearchContext,
    sim: Similarity,
    topic: TopicContext,
    cues: Cues,
    graph: LocalGraph,
    ppr: dict[int, float],
    memories: dict[int, float],
    k: int,
) -> dict[int, float]:
    """Scores of memories met only through the graph that could still enter the top k.

    Such a node's similarity is computed when, at its best (upper bounds of its similarity
    and topic bonus, plus its PageRank, times the largest cue factor), it would beat the
    current k-th score.
    """
    cfg = ctx.cfg
    top_sim = max(sim.scores.values())
    ranks = sorted(memories.values(), reverse=True)
    floor = ranks[k - 1] if len(ranks) >= k else float("-inf")
    others = [n for n in graph.nodes if n not in sim.scores and sim.kinds.get(n) in MEMORY_KINDS]
    own = {n: max(sim.bound(n), 0.0) / top_sim for n in others}
    topic_bound = topic.bound(ctx, own)
    ceiling = cues.ceiling()
    reachable = [
        n for n in others
        if (own[n] + topic_bound.get(n, 0.0) + cfg.ppr_weight * ppr.get(n, 0.0)) * ceiling
        >= floor
    ]  # fmt: skip
    scored = {i: max(s, 0.0) / top_sim for i, s in sim.extend(ctx, reachable).items()}
    for i, extra in topic.bonus(ctx, dict(scored)).items():
        scored[i] += extra
    nodes = ctx.store.nodes_by_ids(scored)
    return {
        i: (scored[i] + cfg.ppr_weight * ppr.get(i, 0.0)) * cues.factor(node)
        for i, node in nodes.items()
    }


@register_retriever("hybrid")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Memories ranked by fused similarity in topic context, nudged by PageRank; for a
    broad question, searched by its topic and spread over the conversation's sessions;
    for an enumeration, searched item by item as well."""
    shape = Shape.of(query)
    pool = max(ctx.cfg.candidates, k)
    notes: list[Explanation] = []

    def scores(text: str, size: int, question: str | None = None, roles: bool = True) -> dict:
        note = Explanation() if ctx.explain else None  # only when asked: it costs a little
        notes.extend([note] if note is not None else [])
        return graph_scores(ctx, text, size, k, question, roles, explain=note)

    if not shape.broad:
        order = ranked(scores(query, pool))
    else:
        found = scores(shape.topic, 2 * pool, question=query, roles=not shape.summary)
        order = ranked(found)
        if shape.ordered or shape.summary:
            order = spread(order, ctx.store.nodes_by_ids(found))
    if shape.parts:
        parts = [ranked(scores(part, pool, question=query)) for part in shape.parts]
        order = interleave([order, *parts])
    order = with_rules(ctx, query, order)
    if ctx.explain:
        ctx.explained(order[:k], notes)
    return ctx.hits(order, k)
