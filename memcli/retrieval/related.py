"""Related words: a question's words looked up among the words its memories use.

A question and the turn that answers it often name one thing in different words ("which
doctor did he see?" / "the physician said to rest"), and BM25 matches a word only up to
its stem. So each content word of the question is looked up among the words of the
space's turns (memcli.store.words, embedded by consolidation), and its `related_words`
nearest words whose cosine reaches `related_similarity` are searched as well, in a second
full-text query whose BM25 is a signal of its own (memcli.retrieval.firstpass). Left
out: inflections of the question's own words (the stemmer already matches them), and
names, whose nearest words are other names, not other ways of saying the same thing. A
question word that no turn uses is embedded on the spot.

A store whose words have no vectors yet (never consolidated) simply gets no related words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.text import name_words, vocabulary_words, words

if TYPE_CHECKING:
    from memcli.retrieval import SearchContext


def related_words(ctx: SearchContext, query: str, count: int, least: float) -> list[str]:
    """The words of the space's turns related to the query's words (each word's `count`
    nearest with cosine at least `least`), in alphabetical order (none when embeddings are
    off, `count` is 0 or no word has a vector yet)."""
    if count <= 0 or ctx.embedder is None:
        return []
    asked = question_words(query)
    if not asked:
        return []
    vocabulary, matrix = ctx.store.word_matrix(ctx.space)
    if matrix is None:
        return []
    import numpy as np  # here: a lexical search never loads it

    known = ctx.store.word_vectors(ctx.space, asked)
    unseen = [w for w in asked if w not in known]
    if unseen:  # embedded as the stored words were (not as a query: e5 tells them apart)
        known.update(zip(unseen, ctx.embedder.embed(unseen), strict=True))
    asking = np.stack([np.asarray(known[w], dtype=np.float32) for w in asked])
    if asking.shape[1] != matrix.shape[1]:  # words embedded by another model: none usable
        return []
    # einsum, not a BLAS product: BLAS threads would spin on the other core after each call,
    # slowing a warm server's next steps (measured: twice the CPU per MCP recall).
    cosines = np.einsum("ij,kj->ik", asking, matrix)
    found: set[str] = set()
    top = min(count + 1, len(vocabulary))  # one more: the word itself
    for word, row in zip(asked, cosines, strict=True):
        best = np.argpartition(-row, top - 1)[:top]
        best = best[np.argsort(-row[best], kind="stable")]
        nearest = [j for j in best if vocabulary[j] != word]
        for j in nearest[:count]:
            if row[j] < least:
                break
            other = vocabulary[j]
            if other not in asked and not any(inflection(other, w) for w in asked):
                found.add(other)
    return sorted(found)


def question_words(query: str) -> list[str]:
    """The query's words that may have related words: its vocabulary words (memcli.text.
    vocabulary_words) without the names (capitalised words after the first), in order."""
    names = {part for word in name_words(query)[1:] if word[:1].isupper() for part in words(word)}
    candidates = vocabulary_words(query)
    return [w for w in dict.fromkeys(words(query)) if w in candidates and w not in names]


def inflection(a: str, b: str) -> bool:
    """Whether two words look like forms of one word: one starts with all but the last two
    letters of the other (at least four)."""
    return a.startswith(b[: max(4, len(b) - 2)]) or b.startswith(a[: max(4, len(a) - 2)])
