"""The part of a long message that a question is about, for the packed context.

A message of thousands of words shown by its first lines hides what matched. Its passages
(memcli.context.passages) are scored by the question's content words, each weighted by how rare it
is among the message's passages (a word in every passage says nothing about where to
look), and the best passage is the one to show; ties go to the earlier passage, and with
no word in common the message's opening is shown.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from memcli.context.passages import Span, passages
from memcli.text import content_words, words

WINDOW = 150  # estimated tokens per passage scored
OVERLAP = 30


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
    scores = [bag_score(bag, weight) for bag in bags]
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    return spans[best]


def bag_score(terms: Iterable[str], weight: dict[str, float]) -> float:
    """The summed weight of a passage's terms, exactly rounded: the same whatever order a
    set yields them in (which changes with the interpreter's hash seed), so that near ties
    between passages break the same way in every process."""
    return math.fsum(weight[t] for t in terms)
