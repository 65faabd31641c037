"""The part of a long message that a question is about, for the packed context.

A message of thousands of words shown by its first lines hides what matched. Its passages
(memcli.passages) are scored by the question's content words, each weighted by how rare it
is among the message's passages (a word in every passage says nothing about where to
look), and the best passage is the one to show; ties go to the earlier passage, and with
no word in common the message's opening is shown.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from memcli.passages import Span, passages, word_spans
from memcli.text import content_words, one_line, words

WINDOW = 150  # estimated tokens per passage scored
OVERLAP = 30
#: What follows an excerpt of a long message in the packed context (its place in the whole).
MARKER = " [excerpt: words {}–{} of {}]"
_MARKER = re.compile(r"\s*\[excerpt: words [\d,]+–[\d,]+ of [\d,]+\]$")


def matched_span(text: str, question: str) -> Span | None:
    """The span of the passage of `text` that best matches `question` (None for a text
    that is one passage or less)."""
    spans = passages(text, WINDOW, OVERLAP)
    if not spans:
        return None
    terms = content_words(question)
    bags = [terms & set(words(text[a:b])) for a, b in spans]
    df = Counter(term for bag in bags for term in bag)
    weight = {term: math.log(1 + len(spans) / count) for term, count in df.items()}
    scores = [sum(weight[t] for t in bag) for bag in bags]
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    return spans[best]


def cut(text: str, spans: list[Span], first: int, last: int) -> str:
    """The words `first` to `last` (exclusive) of `text` (`spans`: its word spans), with
    "…" where words were left out before or after."""
    out = text[spans[first][0] : spans[last - 1][1]]
    return ("… " if first > 0 else "") + out + (" …" if last < len(spans) else "")


def focused(text: str, keep: int, names: set[str], terms: set[str]) -> str:
    """At most `keep` words of `text` on one line: a window with the most words of a
    subject's name (`names`, counted twice) and of the question (`terms`), the middle one
    of the first run of such windows (what matched, centred); the whole text when it is
    short enough."""
    spans = word_spans(text)
    if len(spans) <= keep:
        return one_line(text)
    weight = [
        2 * bool(names & found) + bool(terms & found)
        for found in (set(words(text[a:b])) for a, b in spans)
    ]
    scores = [sum(weight[:keep])]
    for start in range(1, len(spans) - keep + 1):
        scores.append(scores[-1] + weight[start + keep - 1] - weight[start - 1])
    first = last = scores.index(max(scores))
    while last + 1 < len(scores) and scores[last + 1] == scores[first]:
        last += 1
    middle = (first + last) // 2
    return one_line(cut(text, spans, middle, middle + keep))


def without_marker(text: str) -> str:
    """An excerpt's text without its closing MARKER."""
    return _MARKER.sub("", text)
