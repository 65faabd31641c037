"""The part of a long message that a question is about, for the packed context.

A message of thousands of words shown by its first lines hides what matched. Its passages
(memcli.passages) are scored by the question's content words, each weighted by how rare it
is among the message's passages (a word in every passage says nothing about where to
look), and the best passage is the one to show; ties go to the earlier passage, and with
no word in common the message's opening is shown.
"""

from __future__ import annotations

import math
from collections import Counter

from memcli.passages import Span, passages
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
    scores = [sum(weight[t] for t in bag) for bag in bags]
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    return spans[best]
