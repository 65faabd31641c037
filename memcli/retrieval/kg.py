"""What the PersonalAI traversals (`beam`, `watercircles`, `astar`) share.

PersonalAI answers from a knowledge graph in three steps: the question's entities are
matched to graph nodes (the starting vertices), a traversal collects what lies on the
paths between and around them, and a filter ranks what was collected by its similarity
to the question. Here the graph is memcli's: entities (MENTIONS from the turns and facts
that name them, RELATION between them), turns (NEXT, PART_OF their topic segment), facts,
segments and concepts.

- Starting vertices: the question's best matched entities (`retrieval.entity_match`:
  plain similarity × specificity) and its `kg_seeds` most relevant memories (a space with
  few named things, or a question that names none, still has somewhere to start).
- The subgraph: everything within `expand_depth` hops of the starts, at most
  `kg_max_nodes` nodes, hubs (nodes with more than `hub_threshold` edges) not expanded
  through.
- Relevance of a node: the default's score of a memory, relative to the best first
  candidate's (memcli.retrieval.relevance), another node's plain similarity; entities by
  their match score.
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
from memcli.retrieval.entity_match import ENTITY, entity_scores
from memcli.retrieval.firstpass import ranked
from memcli.retrieval.params import HybridParams, KgParams
from memcli.retrieval.relevance import Relevance

#: A traversal: the store, the parameters, the graph and its starts in; credit (0-1) per
#: node out.
Traversal = Callable[[SearchContext, KgParams, "KnowledgeGraph"], dict[int, float]]


@dataclass
class KnowledgeGraph:
    """The question's starting vertices, its local subgraph and every node's relevance."""

    kinds: dict[int, str]  # of every node read
    entities: dict[int, float]  # matched entity -> match score
    memories: list[int]  # the most relevant memories, best first
    relevance: dict[int, float] = field(default_factory=dict)
    adjacent: dict[int, set[int]] = field(default_factory=dict)
    people: frozenset[str] = frozenset()  # the speakers the question names

    @property
    def starts(self) -> list[int]:
        """Entities first (best match first), then the seed memories."""
        ordered = [i for i, _ in ranked(self.entities)]
        return ordered + [m for m in self.memories if m not in self.entities]

    def neighbours(self, node: int) -> set[int]:
        return self.adjacent.get(node, set())

    def rel(self, node: int) -> float:
        return self.relevance.get(node, 0.0)


def build(ctx: SearchContext, query: str, params: KgParams, k: int) -> KnowledgeGraph | None:
    """Starts, subgraph and relevance for a question (None when nothing matches it)."""
    size = max(ctx.params("hybrid", HybridParams).candidates, k)
    found = Relevance.of(ctx, query, size, extra=[(ENTITY, params.entity_seeds * 4)])
    first = found.relative(found.first)
    if not any(s > 0 for s in first.values()):
        return None
    entities = entity_scores(ctx, found, params.entity_seeds, params.entity_min_similarity)
    best = [i for i, _ in ranked(first)[: params.kg_seeds]]
    kg = KnowledgeGraph(found.fp.kinds, entities, best, people=found.signals.people)
    graph = expand(ctx.store, kg.starts, params.expand_depth,
                   hub_threshold=params.hub_threshold, max_nodes=params.kg_max_nodes)  # fmt: skip
    for src, dst, _, _ in graph.edges:
        kg.adjacent.setdefault(src, set()).add(dst)
        kg.adjacent.setdefault(dst, set()).add(src)
    kg.relevance = found.relative([*found.scores, *graph.nodes])
    best_entity = max(kg.entities.values(), default=1.0) or 1.0
    kg.relevance.update({i: s / best_entity for i, s in kg.entities.items()})
    return kg


def retrieve(ctx: SearchContext, query: str, k: int, name: str, traverse: Traversal) -> list[Hit]:
    """Hits of a traversal strategy: the first pass's and the traversal's memories, ranked
    by relevance plus the traversal's credit, times the cues."""
    params = ctx.params(name, KgParams)
    kg = build(ctx, query, params, k)
    if kg is None:
        return []
    credit = traverse(ctx, params, kg)
    scores = final_scores(ctx, query, params, kg, credit)
    return ctx.hits(spread(ctx, params, scores), k)


def final_scores(
    ctx: SearchContext, query: str, params: KgParams, kg: KnowledgeGraph,
    credit: Mapping[int, float],
) -> dict[int, float]:  # fmt: skip
    """relevance + kg_weight × credit, times the cues, for every memory scored."""
    ids = [i for i in {*kg.relevance, *credit} if kg.kinds.get(i) in MEMORY_KINDS]
    nodes = ctx.store.nodes_by_ids(ids)
    cues = Cues.of(query, nodes.values(), beta_time=params.beta_time, beta_role=params.beta_role)
    cues = cues.naming(kg.people)
    return {
        i: (kg.rel(i) + params.kg_weight * credit.get(i, 0.0)) * cues.factor(node)
        for i, node in nodes.items()
    }


def spread(
    ctx: SearchContext, params: KgParams, scores: dict[int, float]
) -> list[tuple[int, float]]:
    """Best first, each memory's score times `kg_session_discount` to the power of the
    better-scored memories of its session (1 = plain ranking): what a question draws from
    several conversations is not crowded out by one conversation's neighbouring turns."""
    discount = params.kg_session_discount
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
        return retrieve(ctx, query, k, name, traverse)

    strategy.__doc__ = traverse.__doc__
    register_retriever(name, KgParams)(strategy)
