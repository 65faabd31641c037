"""Relevance: the default's scoring of a question's first pass, which every strategy starts from.

The speakers the question names become its role cue and leave the searched text
(memcli.retrieval.people); one first pass finds the candidates (memcli.retrieval.
firstpass); each memory scores Σ weight × signal with `hybrid`'s weights (memcli.
retrieval.params.HybridParams). `hybrid` ranks by these scores; the graph strategies (gam, dwpr, the
traversals) take them, relative to the best, as the relevance their methods start from,
and any other node (a segment, an entity, a concept) its plain similarity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memcli.retrieval import MEMORY_KINDS, SearchContext
from memcli.retrieval.firstpass import FirstPass, Groups, first_pass
from memcli.retrieval.params import HybridParams
from memcli.retrieval.people import People, named_speakers
from memcli.retrieval.signals import Signals


@dataclass
class Relevance:
    """One question's scored first pass; more memories are scored on demand."""

    signals: Signals
    weights: dict[str, float]
    first: list[int]  # the first pass's memory candidates
    scores: dict[int, float]  # of every memory scored so far
    rows: dict[int, dict[str, float]]

    @property
    def fp(self) -> FirstPass:
        return self.signals.fp

    @property
    def matched(self) -> bool:
        """Whether any first candidate matches the question at all (a plain similarity
        above 0): a store of unrelated memories answers nothing."""
        return any(self.signals.plain(i) > 0 for i in self.first)

    @classmethod
    def of(
        cls, ctx: SearchContext, question: str, size: int, *, people: People | None = None,
        text: str | None = None, roles: bool = True, extra: Groups = (),
    ) -> Relevance:  # fmt: skip
        """Score the memories the searches for `text` (default: the question without the
        speakers it names, `people` if given) find, `size` from each signal, with the role
        cue or without; `extra` groups of other kinds join the first pass (their nodes get
        plain similarities)."""
        params = ctx.params("hybrid", HybridParams)
        people = people or named_speakers(ctx, question, params)
        groups = [(MEMORY_KINDS, size), *extra]
        fp = first_pass(ctx, people.query if text is None else text, groups, params)
        first = [i for i in fp.candidates if fp.kinds.get(i) in MEMORY_KINDS]
        named = people.speakers if roles else None
        signals = Signals.start(ctx, fp, question, named, first, params)
        found = cls(signals, params.weights(), first, {}, {})
        found.score(first)
        return found

    def score(self, ids: Iterable[int]) -> dict[int, float]:
        """Σ weight × signal of these memories (computed once each)."""
        new = [i for i in dict.fromkeys(ids) if i not in self.scores]
        self.rows.update(self.signals.rows(new))
        for i in new:
            if i in self.rows:
                self.scores[i] = sum(self.weights[s] * v for s, v in self.rows[i].items())
        return {i: self.scores[i] for i in ids if i in self.scores}

    def relative(self, ids: Sequence[int]) -> dict[int, float]:
        """Relevance in [0, 1] of any nodes: a memory's score over the best first
        candidate's (negative counts 0), another node's plain similarity (memcli.
        retrieval.signals); nodes read here for the first time included."""
        self.fp.extend(self.signals.ctx, ids)
        kinds = self.fp.kinds
        memories = [i for i in ids if kinds.get(i) in MEMORY_KINDS]
        scores = self.score(memories)
        best = max((self.scores[i] for i in self.first if i in self.scores), default=0.0)
        best = best if best > 0 else 1.0
        out = {i: max(s, 0.0) / best for i, s in scores.items()}
        for i in ids:
            if i not in out:
                out[i] = max(self.signals.plain(i), 0.0)
        return out
