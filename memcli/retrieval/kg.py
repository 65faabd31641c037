"""What the PersonalAI traversals (`beam`, `watercircles`, `astar`) share.

PersonalAI answers from a knowledge graph in three steps: the question's entities are
matched to graph nodes (the starting vertices), a traversal collects what lies on the
paths between and around them, and a filter ranks what was collected by its similarity
to the question. Here the graph is memcli's: entities (MENTIONS from the turns and facts
that name them, RELATION between them), turns (NEXT, PART_OF their topic segment), facts,
segments and concepts.

- Starting vertices: the question's best matched entities (`retrieval.entity_match`:
  fused similarity × specificity) and its `kg_seeds` most similar memories (a space with
  few named things, or a question that names none, still has somewhere to start).
- The subgraph: everything within `expand_depth` hops of the starts, at most
  `kg_max_nodes` nodes, hubs not expanded through (as `hybrid` reads it).
- Relevance of a node: its fused similarity to the question, divided by the best
  candidate's, plus (memories) the topic bonus of `hybrid` (`topic_weight` × its topic
  segment's similarity); entities by their match score.
- The filter: every memory collected or found by the first similarity pass scores
  relevance + `kg_weight` × the traversal's credit (0-1), times the time and role cues.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from memcli.graph import expand
from memcli.models import Hit
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.cues import Cues
from memcli.retrieval.entity_match import entity_scores
from memcli.retrieval.fusion import Similarity, inherit_replies, ranked, top
from memcli.retrieval.topic import memories_in_topics

#: A traversal: the settings, the graph and its starts in; credit (0-1) per node out.
Traversal = Callable[[SearchContext, "KnowledgeGraph"], dict[int, float]]


@dataclass
class KnowledgeGraph:
    """The question's starting vertices, its local subgraph and every node's relevance."""

    sim: Similarity
    entities: dict[int, float]  # matched entity -> match score
    memories: list[int]  # the most similar memories, best first
    relevance: dict[int, float] = field(default_factory=dict)
    adjacent: dict[int, set[int]] = field(default_factory=dict)

    @property
    def starts(self) -> list[int]:
        """Entities first (best match first), then the seed memories."""
        ordered = [i for i, _ in ranked(self.entities)]
        return ordered + [m for m in self.memories if m not in self.entities]

    def neighbours(self, node: int) -> set[int]:
        return self.adjacent.get(node, set())

    def rel(self, node: int) -> float:
        return self.relevance.get(node, 0.0)


def build(ctx: SearchContext, query: str, pool: int) -> KnowledgeGraph | None:
    """Starts, subgraph and relevance for a question (None when nothing matches it)."""
    cfg = ctx.cfg
    sim, topic = memories_in_topics(ctx, query, MEMORY_KINDS, pool)
    inherit_replies(ctx, sim, cfg.seeds, cfg.reply_share, cfg.replied_share)
    if not any(s > 0 for s in sim.scores.values()):
        return None
    kg = KnowledgeGraph(
        sim, entity_scores(ctx, query), [i for i, _ in top(sim.scores, cfg.kg_seeds)]
    )
    graph = expand(ctx.store, kg.starts, cfg.expand_depth, hub_threshold=cfg.hub_threshold,
                   max_nodes=cfg.kg_max_nodes)  # fmt: skip
    for src, dst, _, _ in graph.edges:
        kg.adjacent.setdefault(src, set()).add(dst)
        kg.adjacent.setdefault(dst, set()).add(src)
    sim.extend(ctx, graph.nodes)
    sim.kinds.update(ctx.store.kinds_of([n for n in graph.nodes if n not in sim.kinds]))
    top_sim = max(sim.scores.values())
    kg.relevance = {i: max(s, 0.0) / top_sim for i, s in sim.scores.items()}
    memories = {i: r for i, r in kg.relevance.items() if sim.kinds.get(i) in MEMORY_KINDS}
    for i, extra in topic.bonus(ctx, memories).items():
        kg.relevance[i] += extra
    best_entity = max(kg.entities.values(), default=1.0) or 1.0
    kg.relevance.update({i: s / best_entity for i, s in kg.entities.items()})
    return kg


def retrieve(ctx: SearchContext, query: str, k: int, traverse: Traversal) -> list[Hit]:
    """Hits of a traversal strategy: the first pass's and the traversal's memories, ranked
    by relevance plus the traversal's credit, times the cues."""
    kg = build(ctx, query, max(ctx.cfg.candidates, k))
    if kg is None:
        return []
    credit = traverse(ctx, kg)
    scores = final_scores(ctx, query, kg, credit)
    return ctx.hits(spread(ctx, scores), k)


def final_scores(
    ctx: SearchContext, query: str, kg: KnowledgeGraph, credit: Mapping[int, float]
) -> dict[int, float]:
    """relevance + kg_weight × credit, times the cues, for every memory scored."""
    kinds = kg.sim.kinds
    ids = [i for i in {*kg.sim.scores, *credit} if kinds.get(i) in MEMORY_KINDS]
    nodes = ctx.store.nodes_by_ids(ids)
    cues = Cues.of(query, nodes.values(), beta_time=ctx.cfg.beta_time, beta_role=ctx.cfg.beta_role)
    weight = ctx.cfg.kg_weight
    return {
        i: (kg.rel(i) + weight * credit.get(i, 0.0)) * cues.factor(node)
        for i, node in nodes.items()
    }


def spread(ctx: SearchContext, scores: dict[int, float]) -> list[tuple[int, float]]:
    """Best first, each memory's score times `kg_session_discount` to the power of the
    better-scored memories of its session (1 = plain ranking): what a question draws from
    several conversations is not crowded out by one conversation's neighbouring turns."""
    discount = ctx.cfg.kg_session_discount
    order = ranked(scores)
    if discount >= 1.0:
        return order
    sessions = {i: n.session for i, n in ctx.store.nodes_by_ids(scores).items()}
    seen: dict[str | None, int] = {}
    spread_out = {}
    for i, s in order:
        session = sessions.get(i)
        spread_out[i] = s * discount ** seen.get(session, 0)
        seen[session] = seen.get(session, 0) + 1
    return ranked(spread_out)


def register_traversal(name: str, traverse: Traversal) -> None:
    """Make a traversal available as `ask --strategy name`."""

    def strategy(ctx: SearchContext, query: str, k: int) -> list[Hit]:
        return retrieve(ctx, query, k, traverse)

    strategy.__doc__ = traverse.__doc__
    register_retriever(name)(strategy)
