"""How often each English pattern and cue of the default strategy fires, per genre.

Question patterns are read off the question text; the cues that depend on the store (who
speaks, whether an assistant does, what the speakers call each other) are
recorded while the baseline variant answers (genre_patches.Probe); the patterns that weigh
memories are counted over each store's turns.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcli.config import Config
from memcli.memory import Memory
from memcli.retrieval import cues, shapes
from memcli.retrieval.shapes import Shape

if TYPE_CHECKING:
    from tests.bench.genre_patches import Probe
    from tests.bench.genres import Genre


def _found(pattern: Any) -> Callable[[str], bool]:
    return lambda question: pattern.search(question) is not None


def _trimmed(question: str) -> bool:
    shape = Shape.of(question)
    return shape.broad and any(p.search(question) for p in (shapes._META, shapes._FORM_REQUEST))


QUESTION_PATTERNS: dict[str, Callable[[str], bool]] = {
    "shapes._TEMPORAL_QUESTION (asks about time; gam, traversals)": shapes.is_temporal,
    "shapes._SELF (I/my in the question)": _found(shapes._SELF),
    "shapes._ASSISTANT_DID (did you / you said)": _found(shapes._ASSISTANT_DID),
    "shapes._ORDER (order, progression)": _found(shapes._ORDER),
    "shapes._SUMMARY (summary, everything)": _found(shapes._SUMMARY),
    "shapes._AGGREGATE (total, across, throughout)": _found(shapes._AGGREGATE),
    "shapes: broad (any of the three)": lambda q: Shape.of(q).broad,
    "shapes._META/_FORM_REQUEST trim a broad topic": _trimmed,
    "shapes._JOIN/_LAST_JOIN: enumeration parts": lambda q: bool(Shape.of(q).parts),
}


def count_turns(probe: Probe, genre: str, conversation: str, db: Path, shared: dict) -> None:
    """Add a built store's turns matching the memory-side patterns to the probe's tally."""
    mem = Memory(Config(db=str(db), space="default"), **shared)
    try:
        turns = list(mem.store.iter_nodes("default", "episode"))
    finally:
        mem.close()
    tally = probe.turns.setdefault(genre, {})
    found = {
        "turns": len(turns),
        "cues._TIME_IN_TEXT (a date, month, weekday; gam, traversals)": sum(
            cues.time_bearing(t) for t in turns
        ),
        "'?' (a turn that asks: the reply signal of the next)": sum("?" in t.text for t in turns),
    }
    for name, count in found.items():
        tally[name] = tally.get(name, 0) + count


def fire_counts(probe: Probe, genres: list[Genre]) -> dict[str, Any]:
    """Per genre: questions, how many each pattern or cue fired on, and the turn tallies."""
    out: dict[str, Any] = {}
    for genre in genres:
        keyed = [
            ((genre.name, c.name, i), qa["question"])
            for c in genre.bench.conversations
            for i, qa in enumerate(c.questions)
        ]
        counts = {name: sum(test(q) for _, q in keyed) for name, test in QUESTION_PATTERNS.items()}
        for key, _ in keyed:
            for name, fired in probe.fired.get(key, {}).items():
                counts[name] = counts.get(name, 0) + int(fired)
        out[genre.name] = {
            "questions": len(keyed), "fires": counts, "turns": probe.turns.get(genre.name, {})
        }  # fmt: skip
    return out
