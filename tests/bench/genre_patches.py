"""Switches for retrieval components that have no setting, and probes that count what fires.

Ablating a component means running retrieval as if it were not there. Where a setting does
that (`ppr_weight=0`), a variant overrides it; where none does, the bench patches the module
for the duration of one question (never a switch in production code). A variant names a
patch like a setting: `nonames=hybrid:names=off`, `noctx=hybrid:context_weight=0`.

- ordered=off, summary=off, aggregate=off: that question-shape pattern never matches
  (memcli.retrieval.shapes), so it neither makes a question broad nor trims its topic;
- broad=off: all three at once: no question is broad;
- parts=off: no question is an enumeration;
- context_weight=W: the BM25 weight of a turn's context column (memcli.store.sqlite.fts); at 0 the
  column is also left out of the match, as if turns were indexed without context;
- names=off: the question's speakers are not read (memcli.retrieval.people): their names
  stay in the searched text and give no role cue;
- aliases=off: only a speaker's account name names them (no name read from how the chat
  addresses them);
- pronouns=off: "I"/"you" never name the user or the assistant (memcli.retrieval.shapes).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from unittest import mock

from memcli.errors import UsageError
from memcli.retrieval import people, relevance, shapes, signals
from memcli.retrieval.signals import Signals
from memcli.store.sqlite import fts

NEVER = re.compile(r"(?!)")  # a pattern that matches nothing
_SHAPE_PATTERNS = {"ordered": "_ORDER", "summary": "_SUMMARY", "aggregate": "_AGGREGATE"}


def _off(value: str, key: str) -> None:
    if value != "off":
        raise UsageError(f"{key}={value}: this switch only takes 'off'", fix=f"write {key}=off")


def _shape_off(key: str) -> Callable[[str], contextlib.AbstractContextManager[Any]]:
    def patch(value: str) -> contextlib.AbstractContextManager[Any]:
        _off(value, key)
        names = _SHAPE_PATTERNS.values() if key == "broad" else [_SHAPE_PATTERNS[key]]
        stack = contextlib.ExitStack()
        for name in names:
            stack.enter_context(mock.patch.object(shapes, name, NEVER))
        return stack

    return patch


def _parts_off(value: str) -> contextlib.AbstractContextManager[Any]:
    _off(value, "parts")
    return mock.patch.object(shapes, "_parts", lambda _text: ())


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


def _names_off(value: str) -> contextlib.AbstractContextManager[Any]:
    _off(value, "names")
    return mock.patch.object(
        relevance, "named_speakers", lambda _ctx, q: people.People(frozenset(), q)
    )


def _aliases_off(value: str) -> contextlib.AbstractContextManager[Any]:
    _off(value, "aliases")
    return mock.patch.object(people, "addressee", lambda _ctx, _word: None)


def _pronouns_off(value: str) -> contextlib.AbstractContextManager[Any]:
    _off(value, "pronouns")
    return mock.patch.object(signals, "pronoun_roles", lambda _q, _speakers: set())


PATCHES: dict[str, Callable[[str], contextlib.AbstractContextManager[Any]]] = {
    "names": _names_off,
    "aliases": _aliases_off,
    "pronouns": _pronouns_off,
    "parts": _parts_off,
    "context_weight": _context_weight,
    **{key: _shape_off(key) for key in (*_SHAPE_PATTERNS, "broad")},
}


def split_overrides(settings: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(retrieval settings, patches) of a variant's overrides."""
    config = {k: v for k, v in settings.items() if k not in PATCHES}
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
    answered."""

    def __init__(self, variant: str) -> None:
        self.variant = variant
        self.fired: dict[Any, dict[str, bool]] = {}
        self.turns: dict[str, dict[str, int]] = {}  # genre -> pattern -> turns (genre_fires)

    @contextlib.contextmanager
    def recording(self, key: Any) -> Iterator[None]:
        """Record what fires while one question is asked under `key`."""
        sink = self.fired.setdefault(key, {})
        real_start, real_addressee = Signals.start, people.addressee

        def start(ctx: Any, fp: Any, question: str, named: Any, pool: Any) -> Signals:
            found = real_start(ctx, fp, question, named, pool)
            speakers = {n.speaker for n in found.nodes.values() if n.speaker}
            _any(sink, "role cue", bool(found.people))
            _any(sink, "role cue by pronoun", bool(shapes.pronoun_roles(question, speakers)))
            return found

        def addressee(ctx: Any, word: str) -> Any:
            speaker = real_addressee(ctx, word)
            _any(sink, "a name read as what a speaker is called", speaker is not None)
            return speaker

        with (
            mock.patch.object(Signals, "start", start),
            mock.patch.object(people, "addressee", addressee),
        ):
            yield


def _any(sink: dict[str, bool], name: str, value: bool) -> None:
    sink[name] = sink.get(name, False) or value
