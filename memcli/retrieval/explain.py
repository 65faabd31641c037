"""Why a hit ranked: the contract between the strategies and whoever shows their results.

A strategy that explains itself fills, when `SearchContext.explain` is on (and only then:
it costs a little), two things per hit:

- `Hit.why`: {signal: contribution}. The contributions add up to the hit's score (up to
  rounding): for the default, each signal's weight × its value (memcli.retrieval.
  signals); a contribution may be negative. A strategy uses the keys of SIGNALS where
  they fit and may add its own (they are shown by their key); a key it does not use, or
  whose contribution is 0, is left out.
- `Hit.via`: for a hit that was not a direct match of the question (met through the
  graph), the node ids of the path that brought it, from a direct match to the hit
  itself; empty for a direct match (every hit of `hybrid` is one).

A strategy that does not explain itself leaves `why` None: the hit shows its score alone.
Turning explanations on never changes a score or the order of the hits. `ask --explain`
(`Memory.ask(explain=True)`) carries them in `--json`; `memcli ui` shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

#: The signals strategies report, with a label and what the contribution means. Shown in
#: this order; keys not listed here come after them, labelled by the key itself.
SIGNALS: dict[str, tuple[str, str]] = {
    "fulltext": ("full-text", "BM25 of the question's words in the memory's own words"),
    "related": ("related words", "BM25 of the words nearest the question's"),
    "vector": ("vector", "cosine between the question and the memory"),
    "reply": ("reply", "the similarity of the turn it answers, when that turn asks"),
    "role": ("role cue", "the question names the memory's speaker"),
    "fulltext_rank": ("full-text rank", "how near the top of the full-text list it came"),
    "vector_rank": ("vector rank", "how near the top of the vector list it came"),
}


def label(key: str) -> str:
    """How a signal is shown: its label, else the key itself."""
    return SIGNALS[key][0] if key in SIGNALS else key


def ordered(why: Mapping[str, float]) -> list[tuple[str, float]]:
    """The contributions in the order of SIGNALS, unknown keys last (sorted)."""
    known = [(k, why[k]) for k in SIGNALS if k in why]
    return known + sorted((k, v) for k, v in why.items() if k not in SIGNALS)


Reasons = tuple[dict[int, dict[str, float]], dict[int, list[int]]]  # why, via by node id


@dataclass
class Explanation:
    """One scoring pass: the scores it gave, and how to explain any of them. Explaining
    is deferred to the hits finally returned (`resolve`), a few of the hundreds scored."""

    score: dict[int, float] = field(default_factory=dict)
    resolve: Callable[[Sequence[int]], Reasons] | None = None
