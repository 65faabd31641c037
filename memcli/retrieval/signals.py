"""The signals of the default strategy, each declared once, and one question's values of them.

A signal is a function of a memory, on a scale that compares across questions, declared
with `@signal`: its name, the label and description `--explain` and the UI show
(memcli.retrieval.explain), and its default weight. Everything else reads SIGNALS: the
weights become parameters of `hybrid` (memcli.retrieval.params.HybridParams, tunable
under `retrieval.tuning.hybrid`), each memory's row holds every signal in the order
declared, and the fit scripts (tests/bench/rank_dump.py, rank_fit.py) dump and fit them.
Adding a signal is one declaration and its compute function (docs/retrieval.md, "Adding a
signal to the default").

The scales: BM25 is divided by the question's best weighted BM25, so 1 is the best
full-text match whatever the question's words; cosine is the cosine; the rest are shares
(0-1) or flags (0 or 1). A memory's plain similarity (`plain`: BM25, related words and the
turn context included, and cosine averaged, relative to the best candidate's) is what its
neighbours inherit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memcli.models import Node
from memcli.retrieval.cues import role_match
from memcli.retrieval.firstpass import FirstPass, FirstPassParams, ranked
from memcli.retrieval.shapes import ShapeParams, pronoun_roles

if TYPE_CHECKING:
    from memcli.retrieval import SearchContext

Compute = Callable[["Signals", int], float]  # (the question's signals, memory id) -> value


@dataclass(frozen=True)
class Signal:
    """One signal of the default, as declared."""

    name: str  # its key: in a memory's row, in `Hit.why`, and its weight's parameter
    label: str  # how --explain and the UI show it
    about: str  # what its contribution means
    weight: float  # its default weight (fitted: docs/retrieval.md)
    compute: Compute


#: Every signal of the default, by name, in the order declared (the order they are shown).
SIGNALS: dict[str, Signal] = {}


def signal(name: str, *, label: str, about: str, weight: float) -> Callable[[Compute], Compute]:
    """Declare the decorated function `(signals, memory id) -> value` a signal of the
    default, with its name, label, description and default weight."""

    def declare(compute: Compute) -> Compute:
        if name in SIGNALS:
            raise ValueError(f"signal {name!r} is declared twice")
        SIGNALS[name] = Signal(name, label, about, weight, compute)
        return compute

    return declare


@dataclass(frozen=True)
class SignalParams(ShapeParams, FirstPassParams):
    """The numbers the signals read beside the first pass's and the pronoun rule's (part of
    `hybrid`'s parameters, memcli.retrieval.params.HybridParams)."""

    # A memory's place in each of the first pass's lists counts beside its score there: 1
    # over this offset plus its rank (0 for the first). Ranks say what the scores cannot
    # across questions, how far a memory stands from the best of its own list. Chosen leave
    # one genre out among 1-60 (docs/benchmarks/genres.md, "Ranks beside scores").
    rank_offset: int = 10
    # A node's plain similarity: its BM25 (relative to the question's best) and its cosine,
    # each weighed so (averaged by default; BM25 alone without vectors).
    plain_fulltext: float = 0.5
    plain_vector: float = 0.5


@signal(
    "fulltext", label="full-text", weight=0.14,
    about="BM25 of the question's words in the memory's own words",
)  # fmt: skip
def _fulltext(q: Signals, memory: int) -> float:
    """BM25 of the question's words in the memory's own text, over the question's best."""
    return q.fp.words.get(memory, 0.0) / q.scale


@signal(
    "related", label="related words", weight=0.03,
    about="BM25 of the words nearest the question's",
)  # fmt: skip
def _related(q: Signals, memory: int) -> float:
    """BM25 of the question's related words (memcli.retrieval.related), on the same scale."""
    return q.fp.related.get(memory, 0.0) / q.scale


@signal(
    "vector", label="vector", weight=0.36,
    about="cosine between the question and the memory",
)  # fmt: skip
def _vector(q: Signals, memory: int) -> float:
    """Cosine between the question's embedding and the memory's."""
    return q.fp.cosine.get(memory, 0.0)


@signal(
    "reply", label="reply", weight=0.04,
    about="the similarity of the turn it answers, when that turn asks",
)  # fmt: skip
def _reply(q: Signals, memory: int) -> float:
    """The plain similarity of the turn before it, when that turn asks something."""
    before = q.before.get(memory, -1)
    asked = before in q.nodes and "?" in q.nodes[before].text
    return q.plain(before) if asked else 0.0


@signal(
    "role", label="role cue", weight=0.21,
    about="the question names the memory's speaker",
)  # fmt: skip
def _role(q: Signals, memory: int) -> float:
    """1 when the question names the memory's speaker (memcli.retrieval.people)."""
    return float(role_match(q.nodes[memory], set(q.people)))


@signal(
    "fulltext_rank", label="full-text rank", weight=1.0,
    about="how near the top of the full-text list it came",
)  # fmt: skip
def _fulltext_rank(q: Signals, memory: int) -> float:
    """1 / (rank_offset + its rank in the first pass's full-text list), 0 outside it."""
    return q.by_rank(q.ranks[0].get(memory))


@signal(
    "vector_rank", label="vector rank", weight=0.92,
    about="how near the top of the vector list it came",
)  # fmt: skip
def _vector_rank(q: Signals, memory: int) -> float:
    """1 / (rank_offset + its rank in the first pass's vector list), 0 outside it."""
    return q.by_rank(q.ranks[1].get(memory))


def fused(fp: FirstPass, node_id: int, scale: float, params: SignalParams) -> float:
    """BM25 (with the related words') over `scale`, and cosine, weighed together."""
    lexical = fp.lexical.get(node_id, 0.0) + params.related_share * fp.related.get(node_id, 0.0)
    if fp.vector is None:
        return lexical / scale
    cosine = fp.cosine.get(node_id, 0.0)
    return params.plain_fulltext * lexical / scale + params.plain_vector * cosine


@dataclass
class Signals:
    """One question's signals, computed for any memory on the same scales."""

    ctx: SearchContext
    fp: FirstPass
    question: str
    params: SignalParams
    people: frozenset[str] = frozenset()  # speakers the question names (lower case)
    scale: float = 1.0
    best: float = 1.0  # the best plain similarity among the first memories scored
    nodes: dict[int, Node] = field(default_factory=dict)  # memories, the turns before them
    before: dict[int, int] = field(default_factory=dict)  # turn -> the turn before it
    # each memory's rank in the full-text and the vector list, as the question's first
    # memories were read (later reads add no ranks)
    ranks: tuple[dict[int, int], dict[int, int]] = field(default_factory=lambda: ({}, {}))

    @classmethod
    def start(
        cls, ctx: SearchContext, fp: FirstPass, question: str, named: frozenset[str] | None,
        pool: Sequence[int], params: SignalParams,
    ) -> Signals:  # fmt: skip
        """The scales of one question, set by its first memories `pool`; the role cue for
        the speakers `named` and those its pronouns name (None: no role cue)."""
        found = cls(ctx, fp, question, params, scale=fp.scale())
        found.read(pool)
        by_text, by_vector = (_ranks(scores) for scores in (fp.lexical, fp.cosine))
        found.ranks = (by_text, by_vector)
        if named is not None:
            speakers = {n.speaker for n in found.nodes.values() if n.speaker}
            pronouns = pronoun_roles(question, speakers) if params.shape_pronouns else set()
            found.people = named | frozenset(pronouns)
        best = max((found.plain(i) for i in pool), default=0.0)
        found.best = best if best > 0 else 1.0  # nothing matches: the plain values stay <= 0
        return found

    def read(self, ids: Iterable[int]) -> None:
        """Read the memories, the turns before them and their vectors, once each."""
        new = [i for i in dict.fromkeys(ids) if i not in self.nodes or i not in self.before]
        if not new:
            return
        for a, b, _, _ in self.ctx.store.edge_rows(new, ["NEXT"]):
            self.before[b] = a
        for i in new:
            self.before.setdefault(i, -1)  # -1: none
        wanted = {*new, *(self.before[i] for i in new)}
        missing = [i for i in wanted if i >= 0 and i not in self.nodes]
        self.nodes.update(self.ctx.store.nodes_by_ids(missing))
        self.fp.extend(self.ctx, missing)

    def plain(self, node_id: int) -> float:
        """The plain similarity of a node, relative to the best first memory's."""
        return fused(self.fp, node_id, self.scale, self.params) / self.best

    def by_rank(self, rank: int | None) -> float:
        """A rank's signal: 1 / (rank_offset + rank), 0 for a memory not in the list."""
        return 0.0 if rank is None else 1.0 / (self.params.rank_offset + rank)

    def rows(self, ids: Sequence[int]) -> dict[int, dict[str, float]]:
        """Every declared signal of these memories, in the order of SIGNALS."""
        self.read(ids)
        return {
            i: {name: s.compute(self, i) for name, s in SIGNALS.items()}
            for i in ids
            if i in self.nodes
        }


def _ranks(scores: dict[int, float]) -> dict[int, int]:
    """Each id's rank by score, 0 for the best."""
    return {i: n for n, (i, _) in enumerate(ranked(scores))}
