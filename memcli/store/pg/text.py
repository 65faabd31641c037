"""Full-text search in Postgres, ranked by the same BM25 as the SQLite store's FTS5.

A node's full-text row holds a `tsvector` of stems, each position labelled with the part of
the row it came from (A: the text, B: the speaker, C: a turn's context, the opening words of
the turns before it; memcli.store.search explains why). memcli splits words as FTS5's unicode61
tokenizer does (letters and digits, case and diacritics folded, each CJK character a word,
and CJK character pairs as extra terms, which the SQLite store searches as phrases) and
stems them with Postgres' English Snowball stemmer; it builds the tsvector itself, so the
server's parser and locale never change a word.

BM25 is computed in SQL exactly as FTS5's bm25() is (k1 1.2, b 0.75, IDF floored at 1e-6, a
term's frequency weighted by column: text 1, speaker 0.5, context 0.3; a row's length is its
words in every column), from statistics kept per space by triggers (text_terms: in how many
rows of a space each stem occurs; text_stats: rows and words per space), so one space's
words never change another's ranking, as with SQLite's table per space.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from memcli.store.listing import ORGANISER_KINDS
from memcli.store.pg.schema import CONTEXT_WEIGHT as C
from memcli.store.pg.schema import ORGANISERS_KEY
from memcli.store.pg.schema import SPEAKER_WEIGHT as B
from memcli.store.pg.schema import TEXT_WEIGHT as A
from memcli.store.pg.words import Words, count_words
from memcli.store.search import (
    CJK_CLASS,
    CONTEXT_TURNS,
    CONTEXT_WEIGHT,
    TextRows,
    best_rows,
    indexed_text,
    query_terms,
    split_kinds,
    turn_context,
)

_TOKEN = re.compile(r"[^\W_]+")
_CJK_RUN = re.compile(f"{CJK_CLASS}+")
_CJK_GAP = re.compile(f"(?<={CJK_CLASS})\\s+(?={CJK_CLASS})")
MAX_POSITION = 16383  # a tsvector's last position; later words share it
_STEM_CACHE_MAX = 200_000

# Each batch is one statement, so the statistics triggers run once per batch: a trigger
# per row would update a space's `text_stats` row once per row, and a row updated thousands
# of times in one transaction gets slower with each update.
_UPSERT = (
    "INSERT INTO text_rows (node, space, kind, body, speaker, context, tokens, terms)"
    " SELECT n, %s, k, b, s, '', c, v::tsvector FROM unnest(%s::bigint[], %s::text[],"
    " %s::text[], %s::text[], %s::int[], %s::text[]) AS r(n, k, b, s, c, v)"
    " ON CONFLICT (node) DO UPDATE SET space = excluded.space, kind = excluded.kind,"
    " body = excluded.body, speaker = excluded.speaker, context = '',"
    " tokens = excluded.tokens, terms = excluded.terms"
)
_SET_CONTEXT = (
    "UPDATE text_rows t SET context = u.c, tokens = u.n, terms = u.v::tsvector FROM"
    " unnest(%s::bigint[], %s::text[], %s::int[], %s::text[]) AS u(node, c, n, v)"
    " WHERE t.node = u.node"
)
_TURNS = (
    "SELECT id, seq, text FROM nodes WHERE space = %s AND kind = 'episode'"
    " AND session IS NOT DISTINCT FROM %s"
)
_TURNS_BEFORE = f"{_TURNS} AND seq < %s ORDER BY seq DESC, id DESC LIMIT %s"
_TURNS_BETWEEN = f"{_TURNS} AND seq BETWEEN %s AND %s ORDER BY seq, id"
_TURNS_AFTER = f"{_TURNS} AND seq > %s ORDER BY seq, id LIMIT %s"
# The query's words are stemmed here too (one round trip). Only the postings of the
# query's stems are read (text_postings: per row and stem, how often each part of the row
# holds it, a, b, c: text, speaker, context), so one pass over them gives the weighted
# total and, when asked, each part's own BM25 (FTS5's bm25() with one column's weight 1
# and the others 0).
_SEARCH = """
WITH q AS (SELECT COALESCE((ts_lexize('memcli_stem', w))[1], w) AS term, count(*) AS times
           FROM unnest(%(words)s::text[]) AS w GROUP BY 1),
st AS (SELECT docs::float8 AS n, tokens::float8 / GREATEST(docs, 1) AS avgdl
       FROM text_stats WHERE space = %(stats)s),
idf AS (SELECT q.term, q.times * GREATEST(ln((st.n - d.docs + 0.5) / (d.docs + 0.5)), 1e-6) AS w
        FROM q JOIN text_terms d ON d.space = %(stats)s AND d.term = q.term CROSS JOIN st),
tf AS (SELECT p.node, p.tokens, p.term AS lexeme, p.a::float8 AS a, p.b::float8 AS b,
              p.c::float8 AS c
       FROM text_postings p WHERE p.space = %(space)s AND {kind}p.kind = ANY(%(kinds)s::text[])
           AND p.term = ANY(ARRAY(SELECT term FROM q))),
s AS (SELECT tf.node, idf.w, tf.a, tf.b, tf.c, 1.2 * (0.25 + 0.75 * tf.tokens / st.avgdl) AS k
      FROM tf JOIN idf ON idf.term = tf.lexeme CROSS JOIN st)
SELECT node, {scores} FROM s GROUP BY node ORDER BY 2 DESC, node LIMIT %(limit)s
"""


def _bm25(freq: str) -> str:
    """The SQL sum of BM25 over a row's query stems for a term frequency expression."""
    return f"sum(w * ({freq}) * 2.2 / (({freq}) + k))"


_TOTAL = _bm25("a + 0.5 * b + %(context)s * c")
_COLUMNS = ", ".join(_bm25(part) for part in ("a", "b", "c"))
# Each speaker of a space and its first row, read off the (space, speaker, node) index one
# speaker at a time (a skip scan): a few index probes, however many rows hold a word (0.2 ms
# on 100,000 turns, where asking the full-text index for the word in the speaker part read
# every row holding it: 2-22 ms; tests/bench/bench_pg.py --names).
_SPEAKERS = (
    "WITH RECURSIVE s(speaker) AS ("
    " (SELECT speaker FROM text_rows WHERE space = %(space)s AND speaker IS NOT NULL"
    " ORDER BY speaker LIMIT 1)"
    " UNION ALL"
    " SELECT (SELECT t.speaker FROM text_rows t WHERE t.space = %(space)s"
    " AND t.speaker > s.speaker ORDER BY t.speaker LIMIT 1) FROM s WHERE s.speaker IS NOT NULL)"
    " SELECT speaker, (SELECT min(t.node) FROM text_rows t WHERE t.space = %(space)s"
    " AND t.speaker = s.speaker) FROM s WHERE speaker IS NOT NULL"
)


def fold(text: str) -> str:
    """Lower case without diacritics, as unicode61 (remove_diacritics 2) reads text."""
    decomposed = unicodedata.normalize("NFD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """The words FTS5 would index for this text (as indexed: CJK characters split)."""
    return _TOKEN.findall(fold(text))


def cjk_pairs(text: str) -> list[str]:
    """Each pair of adjacent CJK characters, as one term (the phrases a query asks for).
    Characters with only spaces between them are adjacent words to FTS5, so they pair too
    (indexed text has a space around every CJK character)."""
    joined = _CJK_GAP.sub("", text)
    return [fold(a + b) for run in _CJK_RUN.findall(joined) for a, b in itertools.pairwise(run)]


def _columns(rows: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Rows as one list per column, for a statement that unnests arrays."""
    return [list(column) for column in zip(*rows, strict=True)]


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


class FullText(Words, TextRows):
    """Node text in `text_rows`, one row per node, every space in one table."""

    _stems: dict[str, str] | None = None

    def stems(self, words: Iterable[str]) -> dict[str, str]:
        """The stem of each word (Postgres' English Snowball stemmer), cached per store."""
        if self._stems is None or len(self._stems) > _STEM_CACHE_MAX:
            self._stems = {}
        missing = sorted(set(words) - self._stems.keys())
        if missing:
            rows = self.run(
                "SELECT w, (ts_lexize('memcli_stem', w))[1] FROM unnest(%s::text[]) AS w",
                (missing,),
            )
            self._stems.update((w, s or w) for w, s in rows)
        return self._stems

    def terms_literal(self, parts: Sequence[tuple[str, str]]) -> tuple[int, str]:
        """(word count, tsvector literal) of (weight, indexed text) parts."""
        found = [(w, [*tokens(text), *cjk_pairs(text)], len(tokens(text))) for w, text in parts]
        stems = self.stems(t for _, words, _ in found for t in words)
        places: dict[str, list[str]] = {}
        position = 0
        for weight, words, _ in found:
            for word in words:
                position = min(position + 1, MAX_POSITION)
                places.setdefault(stems[word], []).append(f"{position}{weight}")
        literal = " ".join(f"{_quote(s)}:{','.join(p[:256])}" for s, p in places.items())
        return sum(n for _, _, n in found), literal

    def index_texts(self, space: str, rows: Iterable[tuple[int, str, str, str | None]]) -> None:
        """Write (or rewrite) the full-text rows of (node id, kind, text, speaker) of one
        space, turns with their context. Call inside a transaction."""
        rows = list(rows)
        turns = [(i, indexed_text(text)) for i, kind, text, _ in rows if kind == "episode"]
        if turns:  # a turn indexed again first takes its old words away
            count_words(self, space, self._turn_texts([i for i, _ in turns]), -1)
            count_words(self, space, (text for _, text in turns), 1)
        latest = {node_id: (kind, text, speaker) for node_id, kind, text, speaker in rows}
        values = []
        for node_id, (kind, text, speaker) in latest.items():
            body, who = indexed_text(text), speaker or ""
            values.append((node_id, kind, body, who, *self.terms_literal([(A, body), (B, who)])))
        if values:
            self.run(_UPSERT, (space, *_columns(values)))
        self.index_context([node_id for node_id, kind, _, _ in rows if kind == "episode"])

    def unindex_text(self, rows: Iterable[tuple[int, str]]) -> None:
        """Remove the full-text rows of (node id, space) pairs. Call inside a transaction."""
        by_space: dict[str, list[int]] = {}
        for node_id, space in rows:
            by_space.setdefault(space, []).append(node_id)
        for space, ids in by_space.items():
            count_words(self, space, self._turn_texts(ids), -1)
            self.run("DELETE FROM text_rows WHERE node = ANY(%s::bigint[])", (ids,))

    def _turn_texts(self, ids: list[int]) -> list[str]:
        """The indexed texts of those of these rows that are turns."""
        rows = self.run(
            "SELECT body FROM text_rows WHERE kind = 'episode' AND node = ANY(%s::bigint[])",
            (ids,),
        )
        return [str(r[0]) for r in rows]

    def text_search(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, BM25 score, higher is better) for a free-text query within a space."""
        rows = self._search(space, query, limit, kinds, _TOTAL)
        return [(int(node), float(score)) for node, score in rows]

    def text_search_columns(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float, float, float, float]]:
        """As `text_search`, each row with its columns' own BM25 (higher is better):
        (node id, weighted total, text, speaker, context)."""
        rows = self._search(space, query, limit, kinds, f"{_TOTAL}, {_COLUMNS}")
        return [(int(r[0]), float(r[1]), float(r[2]), float(r[3]), float(r[4])) for r in rows]

    def _search(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None, scores: str
    ) -> list[tuple[Any, ...]]:
        """The best `limit` rows of a query, by weighted BM25: (node, *scores)."""
        words: list[str] = []
        for term in query_terms(query):
            words += cjk_pairs(term.replace(" ", "")) if " " in term else tokens(term)
        if not words or limit <= 0:
            return []
        parts = []
        for organisers, wanted in split_kinds(kinds):
            args: dict[str, Any] = {
                "words": words, "space": space, "limit": int(limit), "context": CONTEXT_WEIGHT,
                "stats": space + ORGANISERS_KEY if organisers else space,
                "kinds": wanted or list(ORGANISER_KINDS),
            }  # fmt: skip
            # Any memory: every kind but the organisers'.
            kind = "NOT " if not (wanted or organisers) else ""
            parts.append(list(self.run(_SEARCH.format(kind=kind, scores=scores), args)))
        return best_rows(parts, limit)

    def speaker_named(self, space: str, word: str) -> str | None:
        """The speaker of the space's memories whose name holds this word (any case), or
        None: whether a word of a question names someone who speaks in the space. The
        word's stems must follow each other in the name's, as an FTS5 phrase in the speaker
        column; of two such speakers, the first to speak (lowest id), as in SQLite."""
        found = tokens(word)
        if not found:
            return None
        best: tuple[int, str] | None = None
        for speaker, first in self.run(_SPEAKERS, {"space": space}):
            if (best is None or first < best[0]) and self._name_holds(speaker, found):
                best = (int(first), str(speaker))
        return best[1] if best is not None else None

    def _name_holds(self, name: str, words: list[str]) -> bool:
        """Whether these words' stems follow each other in the name's indexed terms."""
        terms = [*tokens(name), *cjk_pairs(name)]
        stems = self.stems([*terms, *words])
        have, want = [stems[t] for t in terms], [stems[w] for w in words]
        return any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1))

    # -- a turn's context -----------------------------------------------------------

    def index_context(self, turns: Iterable[int], removed: bool = False) -> None:
        """Rewrite the context of these turns and of the turns after them; with `removed`
        (the turns are about to be deleted) only that of their followers. Call inside a
        transaction."""
        for space, session, lo, hi, ids in self._runs(turns):
            window = self._session_window(space, session, lo, hi)
            kept = [w for w in window if not (removed and w[0] in ids)]
            first = min(i for i, w in enumerate(window) if w[0] in ids)
            changed = {w[0] for w in window[first:]} - (ids if removed else set())
            contexts = {
                w[0]: turn_context(kept[max(0, i - CONTEXT_TURNS) : i])
                for i, w in enumerate(kept)
                if w[0] in changed
            }
            self._write_contexts(contexts)

    def _write_contexts(self, contexts: dict[int, str]) -> None:
        if not contexts:
            return
        rows = self.run(
            "SELECT node, body, speaker FROM text_rows WHERE node = ANY(%s::bigint[])",
            (list(contexts),),
        ).fetchall()
        columns: list[list[Any]] = [[], [], [], []]
        for node_id, body, speaker in rows:
            size, terms = self.terms_literal([(A, body), (B, speaker), (C, contexts[node_id])])
            for column, value in zip(
                columns, (node_id, contexts[node_id], size, terms), strict=True
            ):
                column.append(value)
        if rows:
            self.run(_SET_CONTEXT, columns)

    def _runs(self, turns: Iterable[int]) -> list[tuple[str, str | None, int, int, set[int]]]:
        """(space, session, lowest seq, highest seq, ids) of the given turns, per session."""
        ids = list(dict.fromkeys(turns))
        if not ids:
            return []
        runs: dict[tuple[str, str | None], list[tuple[int, int]]] = {}
        rows = self.run(
            "SELECT id, space, session, seq FROM nodes WHERE id = ANY(%s::bigint[])"
            " AND kind = 'episode' AND seq IS NOT NULL",
            (ids,),
        )
        for node_id, space, session, seq in rows:
            runs.setdefault((space, session), []).append((int(seq), int(node_id)))
        return [
            (space, session, min(p)[0], max(p)[0], {i for _, i in p})
            for (space, session), p in runs.items()
        ]

    def _session_window(
        self, space: str, session: str | None, lo: int, hi: int
    ) -> list[tuple[int, int, str]]:
        """(id, seq, text) of a session's turns from CONTEXT_TURNS before `lo` to
        CONTEXT_TURNS after `hi`, in order."""
        before = self.run(_TURNS_BEFORE, (space, session, lo, CONTEXT_TURNS)).fetchall()
        inside = self.run(_TURNS_BETWEEN, (space, session, lo, hi)).fetchall()
        after = self.run(_TURNS_AFTER, (space, session, hi, CONTEXT_TURNS)).fetchall()
        return [(int(i), int(q), str(t)) for i, q, t in [*reversed(before), *inside, *after]]
