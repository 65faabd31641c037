"""`embedding.model: auto`: which local model a new store's vectors come from, read off the
first turns it stores.

all-MiniLM-L6-v2 ranks English best: on the three dev genres the default scores macro 67.0
with it against 65.2 with multilingual-e5-small (63.7 with weights refitted for e5;
docs/benchmarks/genres.md). It knows English only: on twelve questions over German,
Spanish, French, Chinese and Japanese turns that share no word with them, the default
finds the answering turn first 3 times with it and 11 times with e5
(tests/llm/test_e5_embed.py). So a store whose first turns read as English gets MiniLM and
any other store e5; English is told by its function words (the full-text stop words), which
make a quarter to a half of English chat and a few hundredths of other languages. The
choice is made once: a store keeps its model (`memcli reindex` after naming another).
"""

from __future__ import annotations

from collections.abc import Iterable

from memcli.llm.e5_embed import E5_MODEL
from memcli.llm.model_files import BUNDLED_MODEL
from memcli.text import STOPWORDS, words

AUTO = "auto"
# English chat: 0.24 (technical, with code) to 0.49 of its words are stop words; German,
# Spanish and French sentences 0.00-0.07, Chinese and Japanese none.
ENGLISH_LEAST = 0.12
# Fewer words than this say too little: the English model, as before `auto` existed.
LEAST_WORDS = 12
SAMPLE_WORDS = 5000  # the first words read


def english_share(texts: Iterable[str]) -> tuple[float, int]:
    """The share of stop words among the texts' first SAMPLE_WORDS words, and how many
    words were read."""
    seen = stop = 0
    for text in texts:
        for word in words(text):
            seen += 1
            stop += word in STOPWORDS
            if seen >= SAMPLE_WORDS:
                return stop / seen, seen
    return (stop / seen if seen else 0.0), seen


def choose(texts: Iterable[str]) -> str:
    """The local model for a store whose first turns are `texts`."""
    share, seen = english_share(texts)
    return E5_MODEL if seen >= LEAST_WORDS and share < ENGLISH_LEAST else BUNDLED_MODEL
