"""Retrieval strategies behind one protocol and a registry.

A strategy is one module in this package, named after it, that decorates a function
`retrieve(ctx, query, k) -> list[Hit]` with `@register_retriever("name", Params)`, plus its
module name in STRATEGY_MODULES (a module is imported when its strategy is first asked for).
`Params` is the frozen dataclass of its parameters (memcli.retrieval.params); the strategy
reads them with `ctx.params(name, Params)`, which applies `retrieval.tuning.<name>`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from memcli.errors import ConfigError, did_you_mean
from memcli.models import Hit, node_public_id

if TYPE_CHECKING:
    from memcli.config import RetrievalConfig
    from memcli.llm import Embedder
    from memcli.store import Store

Retriever = Callable[["SearchContext", str, int], list[Hit]]

STRATEGY_MODULES: tuple[str, ...] = (
    "lexical", "semantic", "hybrid", "dwpr", "gam", "beam", "watercircles", "astar",
)  # fmt: skip

# Kinds returned as hits. Segments, concepts and entities organise the graph; their text is
# a summary or a label, so they lead to memories rather than being memories themselves.
MEMORY_KINDS: tuple[str, ...] = ("episode", "fact", "reflection")

_REGISTRY: dict[str, Retriever] = {}
_PARAMS: dict[str, type] = {}
P = TypeVar("P")


def register_retriever(name: str, params: type | None = None) -> Callable[[Retriever], Retriever]:
    """Decorator: make `fn` available as `ask --strategy name`, its parameters `params`."""

    def wrap(fn: Retriever) -> Retriever:
        _REGISTRY[name] = fn
        if params is not None:
            _PARAMS[name] = params
        return fn

    return wrap


def params_class(name: str) -> type | None:
    """The parameters dataclass of a strategy (None for one without parameters)."""
    get_retriever(name)
    return _PARAMS.get(name)


def _load_all() -> None:
    for module in STRATEGY_MODULES:
        importlib.import_module(f"memcli.retrieval.{module}")


def strategy_names() -> list[str]:
    """Every strategy name (each is its module's name, so nothing is imported)."""
    return sorted(STRATEGY_MODULES)


def get_retriever(name: str) -> Retriever:
    """The strategy registered under `name`, or a ConfigError listing the choices. Only its
    own module is imported (each strategy module is named after its strategy)."""
    if name in STRATEGY_MODULES:
        importlib.import_module(f"memcli.retrieval.{name}")
    if name not in _REGISTRY:
        _load_all()  # for the list of choices
    if name not in _REGISTRY:
        raise ConfigError(
            f"unknown retrieval strategy {name!r}{did_you_mean(name, _REGISTRY)}",
            fix=f"choose one of: {', '.join(sorted(_REGISTRY))}",
        )
    return _REGISTRY[name]


Reasons = tuple[dict[int, dict[str, float]], dict[int, list[int]]]  # why, via by node id


@dataclass
class Explanation:
    """One scoring pass: the scores it gave, and how to explain any of them (memcli.
    retrieval.explain). Explaining is deferred to the hits finally returned (`resolve`), a
    few of the hundreds scored."""

    score: dict[int, float] = field(default_factory=dict)
    resolve: Callable[[Sequence[int]], Reasons] | None = None


@dataclass
class SearchContext:
    """What a strategy may use: the store, the space, the embedder and the settings.

    With `explain`, a strategy that can says why each hit ranked (memcli.retrieval.explain)
    through `explained`, and `hits` hands that on with the hits."""

    store: Store
    space: str
    embedder: Embedder | None
    cfg: RetrievalConfig
    explain: bool = False
    _vectors: dict[str, Any] = field(default_factory=dict)
    _why: dict[int, tuple[dict[str, float], list[int]]] = field(default_factory=dict)

    def params(self, strategy: str, cls: type[P]) -> P:
        """A strategy's parameters: its defaults with `retrieval.tuning.<strategy>` applied
        (a ConfigError for an unknown name or a bad value)."""
        from memcli.retrieval.tuning import tuned

        return tuned(cls, self.cfg.tuning.get(strategy), strategy)

    def query_vector(self, text: str) -> Any:
        """The query's embedding (computed once per text), or None without an embedder."""
        if self.embedder is None:
            return None
        if text not in self._vectors:
            self.prefetch([text])
        return self._vectors[text]

    def prefetch(self, texts: Sequence[str]) -> None:
        """Embed the queries not embedded yet in one call (one model call costs about the same
        for one short text as for a few)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if todo and self.embedder is not None:
            self._vectors.update(zip(todo, self.embedder.embed_queries(todo), strict=True))

    def explained(self, order: Sequence[tuple[int, float]], notes: Sequence[Explanation]) -> None:
        """Keep why each ranked (node id, score) scored so: from the first of the scoring
        passes `notes` that gave it that very score (a score no pass gave is not explained)."""
        asked: dict[int, list[int]] = {}  # pass -> the node ids it must explain
        for node_id, score in order:
            n = next((n for n, note in enumerate(notes) if note.score.get(node_id) == score), None)
            if n is not None:
                asked.setdefault(n, []).append(node_id)
        for n, node_ids in asked.items():
            resolve = notes[n].resolve
            why, via = resolve(node_ids) if resolve is not None else ({}, {})
            for node_id in node_ids:
                self._why[node_id] = (why.get(node_id, {}), via.get(node_id, []))

    def hits(self, scored: Sequence[tuple[int, float]], k: int | None = None) -> list[Hit]:
        """Turn (node id, score) pairs, best first, into Hits with provenance filled in
        (and why they ranked, when the strategy said so)."""
        chosen = list(scored if k is None else scored[:k])
        nodes = self.store.nodes_by_ids(i for i, _ in chosen)
        derived = [i for i, _ in chosen if i in nodes and nodes[i].kind != "episode"]
        sources = self.store.sources_of(derived) if derived else {}
        hits = [Hit(nodes[i], score, sources.get(i, [])) for i, score in chosen if i in nodes]
        if self._why:
            self._attach_why(hits)
        return hits

    def _attach_why(self, hits: list[Hit]) -> None:
        steps = {i for h in hits for i in self._why.get(h.node.id, ({}, []))[1]}
        kinds = self.store.kinds_of(list(steps)) if steps else {}
        for hit in hits:
            if hit.node.id in self._why:
                why, via = self._why[hit.node.id]
                hit.why = dict(why)
                hit.via = [node_public_id(kinds[i], i) for i in via if i in kinds]
