"""Long messages as passages: overlapping windows of a text.

A message of thousands of words says many things, and what a question asks about usually
sits in one part of it. `passages` cuts a text longer than one window into windows of at
most `window` (estimated) tokens, cut at paragraph, line or sentence ends, each starting
with the last `overlap` tokens of the one before, and a fenced code block kept whole in
one passage whenever it fits. Each passage is a span (start, end) of the text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator
from itertools import accumulate

# Model tokens are estimated as words and punctuation marks, a long word counting one more
# per 6 characters (close to a WordPiece tokenizer's count on English text and code).
_PIECE = re.compile(r"\w+|[^\w\s]")
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_LINE = re.compile(r"\n")
_SENTENCE = re.compile(r"(?<=[.!?:;])\s+")
_WORD = re.compile(r"\s+")

Span = tuple[int, int]


class _Tokens:
    """Estimated tokens of any span of one text, from prefix sums (each piece counted
    where it starts)."""

    def __init__(self, text: str) -> None:
        found = [(m.start(), 1 + (m.end() - m.start() - 1) // 6) for m in _PIECE.finditer(text)]
        self.starts = [start for start, _ in found]
        self.totals = [0, *accumulate(cost for _, cost in found)]

    def count(self, start: int, end: int) -> int:
        return (
            self.totals[bisect_left(self.starts, end)]
            - self.totals[bisect_left(self.starts, start)]
        )


def _cut(text: str, start: int, end: int, pattern: re.Pattern[str]) -> list[Span]:
    """The span split where `pattern` matches (separators go with the piece before)."""
    pieces: list[Span] = []
    at = start
    for match in pattern.finditer(text, start, end):
        if match.start() > at:
            pieces.append((at, match.start()))
        at = match.end()
    if at < end:
        pieces.append((at, end))
    return pieces


def _units(
    text: str,
    tokens: _Tokens,
    span: Span,
    window: int,
    levels: tuple[re.Pattern[str], ...],
    whole: bool,
) -> Iterator[Span]:
    """Pieces of a span split by each pattern of `levels` in turn (only as far as needed
    to fit a window when `whole`, else down to the last level), finally by words."""
    fits = tokens.count(*span) <= window
    if fits and (whole or not levels):
        yield span
    elif not levels:
        yield from _by_words(text, tokens, span, window)
    else:
        for piece in _cut(text, *span, levels[0]):
            yield from _units(text, tokens, piece, window, levels[1:], whole)


def _by_words(text: str, tokens: _Tokens, span: Span, window: int) -> Iterator[Span]:
    """Consecutive runs of words of at most `window` tokens (a last resort)."""
    run: list[Span] = []
    size = 0
    for word in _cut(text, *span, _WORD):
        cost = tokens.count(*word)
        if run and size + cost > window:
            yield run[0][0], run[-1][1]
            run, size = [], 0
        run.append(word)
        size += cost
    if run:
        yield run[0][0], run[-1][1]


def units(text: str, tokens: _Tokens, window: int) -> list[Span]:
    """The message as an ordered list of pieces that each fit a window: fenced code blocks
    whole (split by lines only when longer than a window), prose in sentences (and lines),
    and, as a last resort, runs of words."""
    out: list[Span] = []
    at = 0
    prose = (_PARAGRAPH, _LINE, _SENTENCE)
    for fence in _FENCE.finditer(text):
        out.extend(_units(text, tokens, (at, fence.start()), window, prose, False))
        out.extend(_units(text, tokens, fence.span(), window, (_LINE,), True))
        at = fence.end()
    out.extend(_units(text, tokens, (at, len(text)), window, prose, False))
    return [(a, b) for a, b in out if text[a:b].strip()]


def passages(text: str, window: int, overlap: int) -> list[Span]:
    """Windows over a message longer than `window` tokens ([] for a shorter one)."""
    if window <= 0 or len(text) <= window:  # a token takes at least one character
        return []
    tokens = _Tokens(text)
    if tokens.count(0, len(text)) <= window:
        return []
    pieces = units(text, tokens, window)
    sizes = [tokens.count(*piece) for piece in pieces]
    spans: list[Span] = []
    first = 0
    while first < len(pieces):
        last, size = first, sizes[first]
        while last + 1 < len(pieces) and size + sizes[last + 1] <= window:
            last += 1
            size += sizes[last]
        spans.append((pieces[first][0], pieces[last][1]))
        if last + 1 >= len(pieces):
            break
        back, carried = last + 1, 0
        while back - 1 > first and carried + sizes[back - 1] <= overlap:
            back -= 1
            carried += sizes[back]
        first = back
    return spans


def word_spans(text: str) -> list[Span]:
    """The (start, end) of every whitespace-separated word, in order."""
    return [m.span() for m in _NON_SPACE.finditer(text)]


_NON_SPACE = re.compile(r"\S+")
