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

A strategy hands its scoring passes to `SearchContext.explained` as `Explanation`s
(memcli.retrieval), which resolves the reasons of the hits finally returned. A strategy
that does not explain itself leaves `why` None: the hit shows its score alone. Turning
explanations on never changes a score or the order of the hits. `ask --explain`
(`Memory.ask(explain=True)`) carries them in `--json`; `memcli ui` shows them, each
signal by the label and description declared with it (memcli.retrieval.signals.SIGNALS),
in the order declared; a key declared nowhere comes after them, shown by the key itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from memcli.retrieval.signals import SIGNALS


def label(key: str) -> str:
    """How a signal is shown: its declared label, else the key itself."""
    return SIGNALS[key].label if key in SIGNALS else key


def ordered(why: Mapping[str, float]) -> list[tuple[str, float]]:
    """The contributions in the order the signals are declared, unknown keys last (sorted)."""
    known = [(k, why[k]) for k in SIGNALS if k in why]
    return known + sorted((k, v) for k, v in why.items() if k not in SIGNALS)
