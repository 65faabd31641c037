"""Strategy parameters: frozen dataclasses in code, not keys of the user's config.

Each strategy reads its parameters from one dataclass (its defaults are the method's: a
paper's, or fitted on the dev sets for `hybrid`). A person tuning retrieval overrides them
under `retrieval.tuning.<strategy>` (docs/retrieval.md, "Tuning a strategy"); the benchmark
harness does the same through `memcli.eval.variants.with_overrides`. Unknown names and
values of the wrong type are a ConfigError naming the strategy's parameters (memcli.
retrieval.tuning).
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar

from memcli.retrieval.people import PeopleParams
from memcli.retrieval.signals import SIGNALS, SignalParams

P = TypeVar("P")


def _weighted(cls: type[P]) -> type[P]:
    """The class with one float field per declared signal (memcli.retrieval.signals.
    SIGNALS), named after it, its default the declared weight; to be applied before
    `dataclass`, which makes them fields."""
    if "__annotations__" not in cls.__dict__:  # else it would extend a base's
        cls.__annotations__ = {}
    for declared in SIGNALS.values():
        if hasattr(cls, declared.name) or declared.name in cls.__annotations__:
            raise ValueError(f"signal {declared.name!r} is named like a parameter of hybrid")
        cls.__annotations__[declared.name] = "float"
        setattr(cls, declared.name, declared.weight)
    return cls


@dataclasses.dataclass(frozen=True)
@_weighted
class HybridParams(PeopleParams, SignalParams):
    """`hybrid`: every number and switch of its pipeline, and each signal's weight.

    The steps' own parts: the first pass (memcli.retrieval.firstpass.FirstPassParams), the
    question-shape rules (memcli.retrieval.shapes.ShapeParams), the signals' scales
    (memcli.retrieval.signals.SignalParams) and the people a question names (memcli.
    retrieval.people.PeopleParams). Then one weight per declared signal, a field named
    after it (memcli.retrieval.signals.SIGNALS): a listwise logistic model fitted by
    tests/bench/rank_fit.py on the dev sets of three genres (docs/retrieval.md, "Where the
    weights come from"); only their ratios matter. Every other strategy ranks its first
    memories by them too.
    """

    broad_pool: int = 2  # a broad question is searched with this many times the candidates

    def weights(self) -> dict[str, float]:
        """Each signal's weight, in the order of SIGNALS."""
        return {name: getattr(self, name) for name in SIGNALS}


@dataclasses.dataclass(frozen=True)
class GraphParams:
    """A local subgraph around the best matches, and PageRank on it (GAAMA's weights)."""

    expand_depth: int = 2  # hops from the seeds into the local subgraph
    max_subgraph: int = 3000  # nodes at most in one query's subgraph
    hub_threshold: int = 50  # a node with more edges passes on only threshold/degree of its mass
    damping: float = 0.85  # probability of following an edge rather than restarting
    # PageRank weight of each edge type (both directions are walked; GAAMA's values).
    edge_next: float = 0.8
    edge_part_of: float = 0.5
    edge_related: float = 0.5
    edge_derived_from: float = 0.8
    edge_derived_from_fact: float = 0.5
    edge_has_concept: float = 0.8
    edge_about_concept: float = 0.8
    edge_mentions: float = 0.5
    edge_relation: float = 0.5
    edge_supersedes: float = 0.5
    edge_contradicts: float = 0.5

    def type_weights(self) -> dict[str, float]:
        """PageRank weight of each edge type, from the edge_* parameters."""
        from memcli.models import EDGE_TYPES

        return {t: getattr(self, f"edge_{t.lower()}") for t in EDGE_TYPES}


@dataclasses.dataclass(frozen=True)
class GamParams:
    """`gam` (GAM): topic anchors, and the paper's multiplicative cues."""

    anchors: int = 5  # topic segments anchored by similarity (plus RELATED ones)
    beta_time: float = 1.4  # a temporal question and a memory that carries a time
    beta_role: float = 1.6  # the question names the memory's speaker
    beta_conf: float = 1.2  # a derived memory believed at least min_belief
    min_belief: float = 0.8


@dataclasses.dataclass(frozen=True)
class DwprParams(GraphParams):
    """`dwpr` (MemORAI): multi-aspect seeds, query-weighted PageRank."""

    seeds: int = 10  # seeds per aspect (segments; facts, entities; turns)
    damping: float = 0.5  # probability of following an edge


@dataclasses.dataclass(frozen=True)
class KgParams(GraphParams):
    """`beam`, `watercircles`, `astar` (PersonalAI); the paper's defaults."""

    entity_seeds: int = 5  # entities matched per question
    entity_min_similarity: float = 0.3  # least plain similarity of a matched entity
    kg_seeds: int = 10  # most relevant memories that start a traversal beside the entities
    kg_max_nodes: int = 1000  # nodes at most in the traversed subgraph
    kg_weight: float = 0.3  # a memory scores relevance + kg_weight x its traversal credit
    kg_session_discount: float = 1.0  # x per better-scored memory of its session (1: off)
    beta_time: float = 1.4  # the cues of gam, applied to the sum
    beta_role: float = 1.6
    beam_max_depth: int = 5  # beam: edges at most in a path
    beam_max_paths: int = 10  # beam: paths kept per start (and per step)
    beam_mean_alpha: float = 0.75  # beam: path relevance = alpha x mean + (1 - alpha) x last
    wc_chain_num: int = 25  # watercircles: memories kept where rings of two starts meet
    wc_other_num: int = 6  # watercircles: other memories the rings touched, kept
    astar_endpoints: int = 6  # astar: starts between which shortest paths are sought
    astar_max_depth: int = 10  # astar: edges at most in a path
    astar_max_passed: int = 150  # astar: nodes expanded at most per search
