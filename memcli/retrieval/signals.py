"""Per-memory signals of a question, on scales that compare across questions.

From the first pass (memcli.retrieval.firstpass) each memory gets one number per name in
SIGNALS (memcli.retrieval.params), and the default strategy adds them up with fitted
weights (memcli.retrieval.hybrid). BM25 is divided by the question's best weighted BM25,
so 1 is the best full-text match whatever the question's words; cosine is the cosine; the
rest are shares (0-1) or flags (0 or 1). A memory's plain similarity (`plain`: BM25,
related words and the turn context included, and cosine averaged, relative to the best
candidate's) is what its neighbours inherit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memcli.models import Node
from memcli.retrieval.cues import role_match
from memcli.retrieval.firstpass import RELATED_SHARE, FirstPass, ranked
from memcli.retrieval.shapes import pronoun_roles

if TYPE_CHECKING:
    from memcli.retrieval import SearchContext


# A memory's place in each of the first pass's lists counts beside its score there: 1 over
# this offset plus its rank (0 for the first). Ranks say what the scores cannot across
# questions, how far a memory stands from the best of its own list. Chosen leave one genre
# out among 1-60 (docs/benchmarks-genres.md, "Ranks beside scores").
RANK_OFFSET = 10


def fused(fp: FirstPass, node_id: int, scale: float) -> float:
    """BM25 (with the related words') over `scale`, and cosine, averaged."""
    lexical = fp.lexical.get(node_id, 0.0) + RELATED_SHARE * fp.related.get(node_id, 0.0)
    if fp.vector is None:
        return lexical / scale
    return 0.5 * lexical / scale + 0.5 * fp.cosine.get(node_id, 0.0)


@dataclass
class Signals:
    """One question's signals, computed for any memory on the same scales."""

    ctx: SearchContext
    fp: FirstPass
    question: str
    people: frozenset[str]  # speakers the question names (lower case)
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
        pool: Sequence[int],
    ) -> Signals:  # fmt: skip
        """The scales of one question, set by its first memories `pool`; the role cue for
        the speakers `named` and those its pronouns name (None: no role cue)."""
        found = cls(ctx, fp, question, frozenset(), fp.scale())
        found.read(pool)
        lexical, vector = (_ranks(scores) for scores in (fp.lexical, fp.cosine))
        found.ranks = (lexical, vector)
        if named is not None:
            speakers = {n.speaker for n in found.nodes.values() if n.speaker}
            found.people = named | frozenset(pronoun_roles(question, speakers))
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
        return fused(self.fp, node_id, self.scale) / self.best

    def rows(self, ids: Sequence[int]) -> dict[int, dict[str, float]]:
        """The SIGNALS of these memories."""
        self.read(ids)
        return {i: self._row(i) for i in ids if i in self.nodes}

    def _row(self, i: int) -> dict[str, float]:
        fp, node, scale = self.fp, self.nodes[i], self.scale
        before = self.before.get(i, -1)
        asked = before in self.nodes and "?" in self.nodes[before].text
        return {
            "fulltext": fp.words.get(i, 0.0) / scale,
            "related": fp.related.get(i, 0.0) / scale,
            "vector": fp.cosine.get(i, 0.0),
            "reply": self.plain(before) if asked else 0.0,
            "role": float(role_match(node, set(self.people))),
            "fulltext_rank": _by_rank(self.ranks[0].get(i)),
            "vector_rank": _by_rank(self.ranks[1].get(i)),
        }


def _ranks(scores: dict[int, float]) -> dict[int, int]:
    """Each id's rank by score, 0 for the best."""
    return {i: n for n, (i, _) in enumerate(ranked(scores))}


def _by_rank(rank: int | None) -> float:
    """A rank's signal: 1 / (RANK_OFFSET + rank), 0 for a memory not in the list."""
    return 0.0 if rank is None else 1.0 / (RANK_OFFSET + rank)
