"""The words of each space's turns, for finding related words (memcli.retrieval.related).

A question and the turn that answers it often name one thing in different words ("doctor"
and "physician", "car" and "vehicle"). The `words` table counts, per space,
how many turns hold each word (`memcli.text.vocabulary_words`), in step with the full-text
index: a turn indexed adds its words, a turn removed takes them away, and a word that no
turn holds any more is deleted with its vector, so a forgotten turn leaves none of its
words behind. Consolidation embeds the words that have no vector yet (memcli.consolidate.
words); retrieval reads a space's embedded words as one matrix, kept for as long as they
stay the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from memcli.text import vocabulary_words

Matrix = tuple[list[str], Any]  # words, and their vectors as rows (None: no vectors)


def word_counts(texts: Iterable[str]) -> Counter[str]:
    """How many of the texts hold each word (memcli.text.vocabulary_words)."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(vocabulary_words(text))
    return counts
