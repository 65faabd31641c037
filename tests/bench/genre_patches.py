"""The lab's short names for `hybrid`'s switches, the one patch of the index, and probes that
count what fires.

Ablating a component means running retrieval as if it were not there. Every step of the
default's pipeline has a public switch, a parameter of `hybrid` (memcli.retrieval.params.
HybridParams), which a variant sets like any other (`nobroad=hybrid:shape_broad=off`); the
lab's short names stand for them (`nobroad=hybrid:broad=off`):

- ordered=off, summary=off, aggregate=off: that question-shape rule never matches
  (memcli.retrieval.shapes), so it neither makes a question broad nor trims its topic;
- broad=off: all three at once: no question is broad;
- parts=off: no question is an enumeration;
- pronouns=off: "I"/"you" never name the user or the assistant (memcli.retrieval.shapes);
- names=off: the question's speakers are not read (memcli.retrieval.people): their names
  stay in the searched text and give no role cue;
- aliases=off: only a speaker's account name names them (no name read from how the chat
  addresses them).

One component belongs to the index, not to retrieval, and has no parameter: the weight of a
turn's context column, which the store's full-text search applies (memcli.store.sqlite.fts).
`context_weight=W` sets that public constant for the duration of one question; at 0 the
column is also left out of the match, as if turns were indexed without context.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from unittest import mock

from memcli.retrieval import people, shapes
from memcli.retrieval.signals import Signals
from memcli.store.sqlite import fts

#: Short name -> the parameter of `hybrid` it stands for.
SWITCHES: dict[str, str] = {
    "broad": "shape_broad",
    "ordered": "shape_ordered",
    "summary": "shape_summary",
    "aggregate": "shape_aggregate",
    "parts": "shape_parts",
    "pronouns": "shape_pronouns",
    "names": "people_names",
    "aliases": "people_aliases",
}


def _context_weight(value: str) -> contextlib.AbstractContextManager[Any]:
    weight = float(value)
    stack = contextlib.ExitStack()
    stack.enter_context(mock.patch.object(fts, "CONTEXT_WEIGHT", weight))
    if weight == 0:
        plain = fts.fts_query

        def text_columns_only(text: str) -> str:
            match = plain(text)
            return f"{{text speaker}} : ({match})" if match else match

        stack.enter_context(mock.patch.object(fts, "fts_query", text_columns_only))
    return stack


PATCHES: dict[str, Callable[[str], contextlib.AbstractContextManager[Any]]] = {
    "context_weight": _context_weight,
}


def split_overrides(settings: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(retrieval settings and parameters, the short names read as the parameters they
    stand for; patches) of a variant's overrides."""
    config = {SWITCHES.get(k, k): v for k, v in settings.items() if k not in PATCHES}
    return config, {k: v for k, v in settings.items() if k in PATCHES}


@contextlib.contextmanager
def patched(patches: Mapping[str, str]) -> Iterator[None]:
    """Every patch of a variant in force."""
    with contextlib.ExitStack() as stack:
        for key, value in patches.items():
            stack.enter_context(PATCHES[key](value))
        yield


class Probe:
    """Records, per question, which store-dependent cues of `hybrid` fired while `variant`
    answered (it wraps two public functions, changing nothing they return)."""

    def __init__(self, variant: str) -> None:
        self.variant = variant
        self.fired: dict[Any, dict[str, bool]] = {}
        self.turns: dict[str, dict[str, int]] = {}  # genre -> pattern -> turns (genre_fires)

    @contextlib.contextmanager
    def recording(self, key: Any) -> Iterator[None]:
        """Record what fires while one question is asked under `key`."""
        sink = self.fired.setdefault(key, {})
        real_start, real_addressee = Signals.start, people.addressee

        def start(ctx: Any, fp: Any, question: str, named: Any, *rest: Any) -> Signals:
            found = real_start(ctx, fp, question, named, *rest)
            speakers = {n.speaker for n in found.nodes.values() if n.speaker}
            _any(sink, "role cue", bool(found.people))
            _any(sink, "role cue by pronoun", bool(shapes.pronoun_roles(question, speakers)))
            return found

        def addressee(ctx: Any, word: str, *rest: Any) -> Any:
            speaker = real_addressee(ctx, word, *rest)
            _any(sink, "a name read as what a speaker is called", speaker is not None)
            return speaker

        with (
            mock.patch.object(Signals, "start", start),
            mock.patch.object(people, "addressee", addressee),
        ):
            yield


def _any(sink: dict[str, bool], name: str, value: bool) -> None:
    sink[name] = sink.get(name, False) or value
