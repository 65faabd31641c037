"""What both backends' searches share: how text becomes search terms (CJK text included),
the context a turn is indexed with, and how many neighbours a vector search gives at most."""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memcli.store.listing import ORGANISER_KINDS
from memcli.text import STOPWORDS, words

# A turn is indexed with the opening words of the turns just before it in its session, in a
# column of its own searched at a lower weight. In a conversation a turn often names what it
# is about only by a pronoun ("It starts first time now." after "the garage replaced the
# van's battery"), or answers a question it does not repeat; its context carries those words.
# Measured on both dev sets (2 turns x 30 words, weight 0.3; docs/retrieval.md, "Turn context"):
# flat BM25 61.2 -> 73.3 on LoCoMo, 38.1 -> 38.3 on beam-dev; hybrid 79.3 -> 80.8 and
# 52.5 -> 54.0. The flat region was wide (1-3 turns, 15-60 words, weight 0.3-0.6).
CONTEXT_TURNS = 2
CONTEXT_WORDS = 30
CONTEXT_WEIGHT = 0.3

# Chinese and Japanese write words without spaces between them (Korean spaces phrases, not
# words), so unicode61 would index a whole clause as one token that no query matches. Each
# such character is indexed as a token of its own, and a query asks for its runs' adjacent
# pairs (bigrams, as phrases): the usual way to search CJK text without a dictionary. Text
# without these characters is indexed and queried exactly as before.
# Compiling a class of these ranges costs about a millisecond each, so the patterns are
# compiled when a text first holds a character outside ASCII, not when a command starts.
_CJK = (
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    # since m010: the ideographic marks 々〆〇, small katakana for Ainu, and the CJK
    # extensions beyond the Basic Multilingual Plane (rare names and places)
    "\u3005-\u3007\u31f0-\u31ff\U00020000-\U0003134f"
)
CJK_CLASS = f"[{_CJK}]"
_KANJI = "\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
# What m010 (SQLite) and m006 (Postgres) found indexed in another form before them.
_ADDED_CJK = "[\u3005-\u3007\u31f0-\u31ff\U00020000-\U0003134f]"

# Letters that unicode61's remove_diacritics leaves as they are, because Unicode does not
# write them as a base letter plus a mark: each becomes what a keyboard without it types
# (Straße, Strasse; Øresund, Oresund; Łódź, Lodz). Together with the halfwidth and
# fullwidth forms of CJK text (ＡＢＣ, ｶﾀｶﾅ), read as their usual forms, this is the
# search form of a text (`search_form`), made the same way for the index and the query.
# Text made only of ASCII characters has none of them: English is indexed as before.
_LETTERS = str.maketrans({
    "ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O",
    "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "þ": "th", "Þ": "TH",
    "ı": "i",
})  # fmt: skip
_WIDTH_FORMS = "[\uff01-\uffef]+"


@functools.cache
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source)


def has_cjk(text: str) -> bool:
    """Whether the text holds a Chinese, Japanese or Korean character."""
    return not text.isascii() and _pattern(CJK_CLASS).search(text) is not None


def search_form(text: str) -> str:
    """The text with the letters unicode61 does not fold written as they are typed without
    them (ß as ss, ø as o ...), and halfwidth and fullwidth forms as the usual ones; an
    ASCII text as it is."""
    if text.isascii():
        return text
    text = _pattern(_WIDTH_FORMS).sub(lambda m: unicodedata.normalize("NFKC", m[0]), text)
    return text.translate(_LETTERS)


def indexed_before_search_form(text: str) -> bool:
    """Whether a text's full-text row changed when search forms and the CJK characters
    added with them came in (what the migrations that brought them index again)."""
    return not text.isascii() and (
        search_form(text) != text or _pattern(_ADDED_CJK).search(text) is not None
    )


def indexed_text(text: str) -> str:
    """Node text as the full-text index holds it: in its search form, each CJK character
    a word of its own."""
    text = search_form(text)
    return _pattern(f"({CJK_CLASS})").sub(r" \1 ", text) if has_cjk(text) else text


def _terms(word: str) -> list[str]:
    """A query word's search terms: itself, or for CJK runs inside it their bigrams (and
    a kanji standing alone between kana, often a word of its own: 車 in 車はどこ)."""
    if not has_cjk(word):
        return [word]
    terms: list[str] = []
    for run in _pattern(f"{CJK_CLASS}+|[^{_CJK}]+").findall(word):
        if not has_cjk(run) or len(run) == 1:
            terms.append(run)
            continue
        terms += [f"{a} {b}" for a, b in itertools.pairwise(run)]
        if _pattern(f"[^{_KANJI}]").search(run):  # kana beside the kanji: Japanese
            terms += _pattern(f"(?<![{_KANJI}])[{_KANJI}](?![{_KANJI}])").findall(run)
    return terms


def query_terms(text: str) -> list[str]:
    """The search terms of a question in its search form: every distinct content word
    (for CJK text, its character pairs, as two words with a space between them), in
    order."""
    found = words(search_form(text))
    seen = dict.fromkeys(w for w in found if w not in STOPWORDS and len(w) > 1)
    if not seen:
        seen = dict.fromkeys(w for w in found if len(w) > 1 or has_cjk(w))
    return list(dict.fromkeys(t for w in seen for t in _terms(w)))


def turn_context(before: Sequence[tuple[int, int, str]]) -> str:
    """The opening words of the last CONTEXT_TURNS turns before a turn, oldest first."""
    return indexed_text(
        " ".join(" ".join(text.split()[:CONTEXT_WORDS]) for _, _, text in before[-CONTEXT_TURNS:])
    )


def cjk_rows(
    rows: Iterable[tuple[int, str, str, str, str | None]],
) -> dict[str, list[tuple[int, str, str, str | None]]]:
    """Of (id, space, kind, text, speaker) rows, those whose text holds CJK characters, as
    (id, kind, text, speaker) by space: what a store indexed before CJK text was split into
    words indexes again."""
    by_space: dict[str, list[tuple[int, str, str, str | None]]] = {}
    for node_id, space, kind, text, speaker in rows:
        if has_cjk(text):
            by_space.setdefault(space, []).append((node_id, kind, text, speaker))
    return by_space


# Organisers (memcli.store.listing.ORGANISER_KINDS: what consolidation makes to lead to
# memories) have their full text scored apart from the memories' (turns, facts,
# reflections): a segment's extractive summary repeats its turns' sentences, and counted
# with them it changed every turn's BM25 after `consolidate` (LoCoMo dev 83.9 -> 83.2
# recall@10 for the default; docs/consolidation.md).


def split_kinds(kinds: Sequence[str] | None) -> list[tuple[bool, list[str]]]:
    """The parts a full-text search of these kinds (None: any) reads, as (organisers?,
    the kinds asked of that part; an empty list: any of it)."""
    if kinds is None:
        return [(False, []), (True, [])]
    parts = []
    for organisers in (False, True):
        wanted = [k for k in kinds if (k in ORGANISER_KINDS) == organisers]
        if wanted:
            parts.append((organisers, wanted))
    return parts


def best_rows(parts: list[list[Any]], limit: int) -> list[Any]:
    """The best `limit` of rows (node id, score, ...) searched in parts, each scored
    against its own part's statistics: by score, ties by node id."""
    if len(parts) == 1:
        return parts[0]
    merged = [row for part in parts for row in part]
    return sorted(merged, key=lambda r: (-float(r[1]), int(r[0])))[:limit]


# A vector search answers at most this many nearest neighbours per query (sqlite-vec's
# limit, which the Postgres store keeps too).
KNN_MAX = 4096

# Two cosine distances closer than this are one distance. Each backend sums a dot product
# in its own order (sqlite-vec, pgvector's SIMD or portable build), so a distance differs
# in its last float32 bits from one backend to the other, and two nodes at the same
# distance (the same words in the same proportions) would come out in either order.
SAME_DISTANCE = 1e-6


def nearest_first(found: Iterable[tuple[float, int]], limit: int) -> list[tuple[int, float]]:
    """(node id, similarity) of `limit` (distance, node id) pairs, nearest first: distances
    within SAME_DISTANCE of the first of their run count as that one, ties by node id, so
    both backends answer alike."""
    ordered = sorted(found)
    settled: list[tuple[float, int]] = []
    start = None
    for distance, node_id in ordered:
        if start is None or distance - start > SAME_DISTANCE:
            start = distance
        settled.append((start, node_id))
    settled.sort()
    return [(node_id, 1.0 - distance) for distance, node_id in settled[:limit]]


class TextRows:
    """Full-text writes both backends make over their own `index_texts`."""

    if TYPE_CHECKING:

        def index_texts(
            self, space: str, rows: Iterable[tuple[int, str, str, str | None]]
        ) -> None: ...

    def index_text(
        self, space: str, node_id: int, kind: str, text: str, speaker: str | None
    ) -> None:
        """Write (or rewrite) a node's full-text row. Call inside a transaction."""
        self.index_texts(space, [(node_id, kind, text, speaker)])

    def index_cjk_again(self, rows: Iterable[tuple[int, str, str, str, str | None]]) -> int:
        """Rewrite the full-text rows of the nodes, of (id, space, kind, text, speaker), whose
        text holds CJK characters: a store indexed before they were split finds them then.
        Call inside a transaction; returns how many rows were rewritten."""
        by_space = cjk_rows(rows)
        for space, items in by_space.items():
            self.index_texts(space, items)
        return sum(map(len, by_space.values()))


class VectorSize:
    """The size of the store's vectors, as `meta` records it."""

    if TYPE_CHECKING:

        def get_meta(self, key: str) -> str | None: ...

    def vector_dim(self) -> int | None:
        """The dimension of the stored vectors (None before the first embedding)."""
        value = self.get_meta("embedding.dim")
        return int(value) if value else None
