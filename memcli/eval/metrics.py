"""Scoring retrieval against gold evidence, as DESIGN.md "Evaluation" defines it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memcli.models import Hit
from memcli.text import content_words

_REF = re.compile(r"D\d+:\d+")


def gold_refs(evidence: Iterable[Any]) -> list[str]:
    """Clean LoCoMo evidence ids ('D1:3'); some entries hold several ids or stray text."""
    refs: list[str] = []
    for item in evidence:
        refs.extend(_REF.findall(str(item)))
    return list(dict.fromkeys(refs))


def ranked_refs(hits: Sequence[Hit]) -> list[str]:
    """Refs in rank order: an episode gives its own, a derived node its sources'; deduped."""
    refs: list[str] = []
    for hit in hits:
        if hit.node.kind == "episode":
            if hit.node.ref:
                refs.append(hit.node.ref)
        else:
            refs.extend(hit.sources)
    return list(dict.fromkeys(refs))


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """|gold ∩ first k ranked| / |gold|."""
    if not gold:
        return 0.0
    return len(set(gold) & set(ranked[:k])) / len(set(gold))


def session_of(ref: str) -> str:
    """The session part of a LoCoMo dialogue id ('D3:5' -> 'D3')."""
    return ref.split(":", 1)[0]


def session_recall_at(
    ranked: Sequence[str],
    gold: Sequence[str],
    k: int,
    session: Callable[[str], str] = session_of,
) -> float:
    """Recall of the gold evidence's sessions among the sessions of the first k refs
    (`session` maps a ref to its session; LoCoMo's ids carry theirs)."""
    wanted = {session(r) for r in gold}
    if not wanted:
        return 0.0
    return len(wanted & {session(r) for r in ranked[:k]}) / len(wanted)


def covers(context: str, answer: Any) -> bool:
    """Whether at least half of the gold answer's content words appear in the context."""
    wanted = content_words(str(answer))
    if not wanted:
        return False
    present = content_words(context)
    return len(wanted & present) * 2 >= len(wanted)


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean, 0 for nothing."""
    return sum(values) / len(values) if values else 0.0
