"""Full-text search over node text with FTS5 and BM25."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from memcli.store import search_tables, sql
from memcli.store.base import StoreBase
from memcli.text import STOPWORDS, words


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: every distinct content word, quoted, OR-ed together."""
    found = words(text)
    seen = dict.fromkeys(w for w in found if w not in STOPWORDS and len(w) > 1)
    if not seen:
        seen = dict.fromkeys(w for w in found if len(w) > 1)
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in seen)


class FullText(StoreBase):
    """Node text in each space's FTS5 table (see `search_tables`), rowid = node id."""

    def index_texts(self, space: str, rows: Iterable[tuple[int, str, str, str | None]]) -> None:
        """Write (or rewrite) the full-text rows of (node id, kind, text, speaker) of one
        space. Call inside a transaction."""
        table = str(search_tables.text_table(self.db, space, create=True))
        self.conn.executemany(
            sql.insert(table, ("rowid", "text", "speaker", "kind"), "REPLACE"),
            [(node_id, text, speaker or "", kind) for node_id, kind, text, speaker in rows],
        )

    def index_text(
        self, space: str, node_id: int, kind: str, text: str, speaker: str | None
    ) -> None:
        """Write (or rewrite) a node's full-text row. Call inside a transaction."""
        self.index_texts(space, [(node_id, kind, text, speaker)])

    def unindex_text(self, rows: Iterable[tuple[int, str]]) -> None:
        """Remove the full-text rows of (node id, space) pairs. Call inside a transaction."""
        by_space: dict[str, list[int]] = {}
        for node_id, space in rows:
            by_space.setdefault(space, []).append(node_id)
        for space, ids in by_space.items():
            table = search_tables.text_table(self.db, space)
            if table is not None:
                self.table(table).delete_where(sql.in_json("rowid"), [json.dumps(ids)])

    def optimize_text(self) -> None:
        """Merge every full-text index (FTS5 keeps deleted terms in old segments until a
        merge) and drop the tables of spaces that hold no node any more."""
        nodes = self.table("nodes")
        for space, table in search_tables.text_tables(self.db):
            if any(nodes.rows_where("space = ?", [space], select="1", limit=1)):
                self.conn.execute(sql.optimize_text_table(table))
            else:
                search_tables.drop_text_table(self.db, space, table)

    def text_search(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, BM25 score, higher is better) for a free-text query within a space."""
        match = fts_query(query)
        table = search_tables.text_table(self.db, space)
        if not match or limit <= 0 or table is None:
            return []
        statement = sql.text_search(table, len(kinds or ()))
        args = [match, *(kinds or ()), int(limit)]
        return [(int(r[0]), float(r[1])) for r in self.conn.execute(statement, args)]
