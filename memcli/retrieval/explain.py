"""Why a hit ranked: the contract between the strategies and whoever shows their results.

A strategy that explains itself fills, when `SearchContext.explain` is on (and only then:
it costs a little), two things per hit:

- `Hit.why`: {signal: contribution}. The contributions add up to the hit's score (up to
  rounding), so a multiplicative cue appears as the score it added or took away. A
  strategy uses the keys of SIGNALS where they fit and may add its own (they are shown
  by their key); a key it does not use is left out, not set to 0.
- `Hit.via`: for a hit that was not a direct match of the question (met through the
  graph, or lifted by a neighbouring turn), the node ids of the path that brought it,
  from a direct match to the hit itself; empty for a direct match.

A strategy that does not explain itself leaves `why` None: the hit shows its score alone.
Turning explanations on never changes a score or the order of the hits. `ask --explain`
(`Memory.ask(explain=True)`) carries them in `--json`; `memcli ui` shows them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.graph import LocalGraph

#: The signals strategies report, with a label and what the contribution means. Shown in
#: this order; keys not listed here come after them, labelled by the key itself.
SIGNALS: dict[str, tuple[str, str]] = {
    "fulltext": ("full-text", "BM25 of the question's words, in the fused similarity"),
    "related": ("related words", "BM25 of the words nearest the question's, fused"),
    "vector": ("vector", "cosine between the question and the memory, fused"),
    "reply": ("reply", "similarity inherited from the turn it answers or that answers it"),
    "topic": ("topic", "the similarity of the topic segment the memory belongs to"),
    "pagerank": ("PageRank", "Personalized PageRank from the best matches"),
    "time": ("time cue", "the question asks when, and the memory carries a date"),
    "role": ("role cue", "the question names the memory's speaker"),
    "confidence": ("confidence cue", "a derived memory believed strongly enough"),
    "rule": ("rule cue", "a standing instruction or preference of the user"),
    "rule_lead": ("standing rule", "a rule the question falls under, moved to the top"),
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


def with_cues(additive: Mapping[str, float], fired: Mapping[str, float]) -> dict[str, float]:
    """The additive parts, plus what the cues that fired (name -> β) added to their sum.

    The cues multiply the sum by their product F, adding (F - 1) × sum; each cue takes the
    share log β / log F of that, so the parts still add up to the score."""
    import math

    parts = {k: v for k, v in additive.items() if v != 0.0}
    total = sum(additive.values())
    factor = math.prod(fired.values())
    if factor != 1.0 and total != 0.0:
        gained = (factor - 1.0) * total
        logs = {name: math.log(beta) for name, beta in fired.items() if beta != 1.0}
        spread = sum(logs.values())
        for name, share in logs.items():
            parts[name] = gained * share / spread
    return parts


def paths(
    graph: LocalGraph, sources: Iterable[int], targets: Sequence[int]
) -> dict[int, list[int]]:
    """The shortest path (node ids, a source first) from any source to each target, over
    the graph's edges walked both ways; targets out of reach get none."""
    neighbours: dict[int, list[int]] = {}
    for src, dst, _, _ in graph.edges:
        neighbours.setdefault(src, []).append(dst)
        neighbours.setdefault(dst, []).append(src)
    parent: dict[int, int | None] = {s: None for s in sources if s in graph.index}
    queue, wanted = deque(parent), set(targets) - set(parent)
    while queue and wanted:
        node = queue.popleft()
        for other in neighbours.get(node, ()):
            if other not in parent:
                parent[other] = node
                wanted.discard(other)
                queue.append(other)
    found: dict[int, list[int]] = {}
    for target in targets:
        if target in parent and parent[target] is not None:
            path: list[int] = []
            step: int | None = target
            while step is not None:
                path.append(step)
                step = parent[step]
            found[target] = path[::-1]
    return found
