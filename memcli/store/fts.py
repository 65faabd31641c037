"""Full-text search over node text with FTS5 and BM25."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)

# Words that carry no topic; dropped from full-text queries so BM25 ranks on content.
# ("may" is not among them: it is also a month.)
STOPWORDS = frozenset(
    """
    a an the and or but if then else of to in on at by for with about from into over after
    before during since until as is are was were be been being am do does did done have has
    had having i me my mine we us our you your he him his she her it its they them their
    this that these those there here what which who whom whose when where why how would
    could should can will shall might must not no yes so than too very just also any
    some all each every both few more most other such only own same s t don
    """.split()
)


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: every distinct content word, quoted, OR-ed together."""
    words = [w.lower() for w in _WORD.findall(text)]
    seen = dict.fromkeys(w for w in words if w not in STOPWORDS and len(w) > 1)
    if not seen:
        seen = dict.fromkeys(w for w in words if len(w) > 1)
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in seen)


class FtsMixin:
    conn: Any

    def text_search(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, BM25 score, higher is better) for a free-text query within a space."""
        match = fts_query(query)
        if not match or limit <= 0:
            return []
        # BM25 through FTS5's `rank` column: ORDER BY rank LIMIT n takes FTS5's top-n path,
        # faster on large stores than sorting a computed bm25() expression.
        sql = (
            "SELECT rowid, -rank AS score FROM nodes_fts"
            " WHERE nodes_fts MATCH ? AND rank MATCH 'bm25(1.0, 0.5)' AND space = ?"
        )
        args: list[Any] = [match, space]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args.extend(kinds)
        sql += " ORDER BY rank LIMIT ?"
        args.append(int(limit))
        return [(int(r[0]), float(r[1])) for r in self.conn.execute(sql, args)]
