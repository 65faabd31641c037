"""Strategy parameters: frozen dataclasses in code, not keys of the user's config.

Each strategy reads its parameters from one dataclass (its defaults are the method's: a
paper's, or fitted on the dev sets for `hybrid`). A person tuning retrieval overrides them
under `retrieval.tuning.<strategy>` (docs/retrieval.md, "Advanced tuning"); the benchmark
harness does the same through `memcli.eval.variants.with_overrides`. Unknown names and
values of the wrong type are a ConfigError naming the strategy's parameters.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from memcli.errors import ConfigError, did_you_mean

P = TypeVar("P")


@dataclasses.dataclass(frozen=True)
class FirstPassParams:
    """The first pass every strategy shares (memcli.retrieval.firstpass)."""

    candidates: int = 50  # best memories taken from each signal (BM25, cosine)
    related_words: int = 3  # per question word, its nearest words among the turns' (0: off)
    related_similarity: float = 0.5  # least cosine between a question word and a related one


#: The signals of a memory the default weighs (memcli.retrieval.signals computes them).
SIGNALS: tuple[str, ...] = (
    "fulltext",  # BM25 of the question's words in the memory's own text
    "related",  # BM25 of the question's related words (memcli.retrieval.related)
    "vector",  # cosine between the question's embedding and the memory's
    "reply",  # plain similarity of the turn before it, when that turn asks something
    "role",  # 1 when the question names the memory's speaker (memcli.retrieval.people)
    "fulltext_rank",  # 1 / (RANK_OFFSET + its rank in the first pass's full-text list)
    "vector_rank",  # 1 / (RANK_OFFSET + its rank in the first pass's vector list)
)


@dataclasses.dataclass(frozen=True)
class HybridParams(FirstPassParams):
    """`hybrid`: the first pass, and each signal's weight (memcli.retrieval.signals).

    The weights are a listwise logistic model fitted by tests/bench/rank_fit.py on the
    dev sets of three genres (docs/retrieval.md, "Where the weights come from"); only
    their ratios matter. Every other strategy ranks its first memories by them too.
    """

    fulltext: float = 0.14
    related: float = 0.03
    vector: float = 0.36
    reply: float = 0.04
    role: float = 0.21
    fulltext_rank: float = 1.0
    vector_rank: float = 0.92

    def weights(self) -> dict[str, float]:
        """Each signal's weight."""
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


def tuned(cls: type[P], overrides: Mapping[str, Any] | None, strategy: str) -> P:
    """The strategy's parameters with `overrides` (name -> value) applied and checked."""
    if not overrides:
        return cls()
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in fields:
            raise ConfigError(
                f"retrieval.tuning.{strategy}: unknown parameter {name!r}"
                f"{did_you_mean(str(name), list(fields))}",
                fix=f"the parameters of {strategy} are: {', '.join(fields)}",
            )
        values[name] = _checked(strategy, name, hints[name], value)
    return cls(**values)


def _checked(strategy: str, name: str, typ: Any, value: Any) -> Any:
    """A number of the parameter's type (an int is a float too), at least 0, or a
    ConfigError. (true/false are not numbers here, nor is NaN.)"""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or (typ is int and not isinstance(value, int)) or value != value:
        raise ConfigError(
            f"retrieval.tuning.{strategy}.{name}: expected {typ.__name__}, got {value!r}",
            fix=f"set it to a {typ.__name__}, or remove it for the default",
        )
    if value < 0:
        raise ConfigError(
            f"retrieval.tuning.{strategy}.{name} must be at least 0, got {value}",
            fix="set it to 0 or more, or remove it for the default",
        )
    return float(value) if typ is float else value
