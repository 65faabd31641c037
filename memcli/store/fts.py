"""Full-text search over node text with FTS5 and BM25."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from memcli.text import STOPWORDS

_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: every distinct content word, quoted, OR-ed together."""
    words = [w.lower() for w in _WORD.findall(text)]
    seen = dict.fromkeys(w for w in words if w not in STOPWORDS and len(w) > 1)
    if not seen:
        seen = dict.fromkeys(w for w in words if len(w) > 1)
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in seen)


# Each space has its own FTS5 table (fts_<id>, listed in fts_spaces), so BM25's document
# statistics come from that space alone: another space's words neither reorder its results
# nor leak through them, and a small space never reads a large one's postings.
_CREATE = (
    "CREATE VIRTUAL TABLE {name} USING fts5 ("
    " text, speaker, kind UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')"
)


class FtsMixin:
    conn: Any

    def _fts_table(self, space: str, create: bool = False) -> str | None:
        """The name of a space's full-text table; made on first use when `create`."""
        row = self.conn.execute("SELECT id FROM fts_spaces WHERE space = ?", (space,)).fetchone()
        if row is not None:
            return f"fts_{int(row[0])}"
        if not create:
            return None
        cur = self.conn.execute("INSERT INTO fts_spaces (space) VALUES (?)", (space,))
        name = f"fts_{int(cur.lastrowid)}"
        self.conn.execute(_CREATE.format(name=name))
        return name

    def _fts_tables(self) -> list[tuple[str, str]]:
        return [
            (space, f"fts_{int(i)}")
            for i, space in self.conn.execute("SELECT id, space FROM fts_spaces ORDER BY id")
        ]

    def index_text(
        self, space: str, node_id: int, kind: str, text: str, speaker: str | None
    ) -> None:
        """Write (or rewrite) a node's full-text row. Call inside a transaction."""
        table = self._fts_table(space, create=True)
        self.conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (node_id,))
        self.conn.execute(
            f"INSERT INTO {table} (rowid, text, speaker, kind) VALUES (?, ?, ?, ?)",
            (node_id, text, speaker or "", kind),
        )

    def unindex_text(self, rows: Iterable[tuple[int, str]]) -> None:
        """Remove the full-text rows of (node id, space) pairs. Call inside a transaction."""
        by_space: dict[str, list[int]] = {}
        for node_id, space in rows:
            by_space.setdefault(space, []).append(node_id)
        for space, ids in by_space.items():
            table = self._fts_table(space)
            if table is not None:
                self.conn.execute(
                    f"DELETE FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))",
                    (json.dumps(ids),),
                )

    def optimize_text(self) -> None:
        """Merge every full-text index (FTS5 keeps deleted terms in old segments until a
        merge) and drop the tables of spaces that hold no node any more."""
        for space, table in self._fts_tables():
            if self.conn.execute(
                "SELECT 1 FROM nodes WHERE space = ? LIMIT 1", (space,)
            ).fetchone():
                self.conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            else:
                self.conn.execute(f"DROP TABLE {table}")
                self.conn.execute("DELETE FROM fts_spaces WHERE space = ?", (space,))

    def text_search(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, BM25 score, higher is better) for a free-text query within a space."""
        match = fts_query(query)
        table = self._fts_table(space)
        if not match or limit <= 0 or table is None:
            return []
        # BM25 through FTS5's `rank` column: ORDER BY rank LIMIT n takes FTS5's top-n path,
        # faster on large stores than sorting a computed bm25() expression.
        sql = (
            f"SELECT rowid, -rank AS score FROM {table}"
            f" WHERE {table} MATCH ? AND rank MATCH 'bm25(1.0, 0.5)'"
        )
        args: list[Any] = [match]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args.extend(kinds)
        sql += " ORDER BY rank LIMIT ?"
        args.append(int(limit))
        return [(int(r[0]), float(r[1])) for r in self.conn.execute(sql, args)]
