"""Full-text search over node text with FTS5 and BM25."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Sequence

from memcli.store import search_tables, sql
from memcli.store.base import StoreBase
from memcli.text import STOPWORDS, words

# Chinese and Japanese write words without spaces between them (Korean spaces phrases, not
# words), so unicode61 would index a whole clause as one token that no query matches. Each
# such character is indexed as a token of its own, and a query asks for its runs' adjacent
# pairs (bigrams, as phrases): the usual way to search CJK text without a dictionary. Text
# without these characters is indexed and queried exactly as before.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_CHAR = re.compile(f"([{_CJK}])")
_CJK_RUN = re.compile(f"[{_CJK}]+|[^{_CJK}]+")


def indexed_text(text: str) -> str:
    """Node text as the full-text index holds it: each CJK character a word of its own."""
    return _CJK_CHAR.sub(r" \1 ", text) if _CJK_CHAR.search(text) else text


def _terms(word: str) -> list[str]:
    """A query word's search terms: itself, or for CJK runs inside it their bigrams."""
    if not _CJK_CHAR.search(word):
        return [word]
    terms: list[str] = []
    for run in _CJK_RUN.findall(word):
        if not _CJK_CHAR.match(run) or len(run) == 1:
            terms.append(run)
        else:
            terms += [f"{a} {b}" for a, b in itertools.pairwise(run)]
    return terms


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: every distinct content word, quoted, OR-ed together (for
    CJK text, its character pairs as phrases)."""
    found = words(text)
    seen = dict.fromkeys(w for w in found if w not in STOPWORDS and len(w) > 1)
    if not seen:
        seen = dict.fromkeys(w for w in found if len(w) > 1 or _CJK_CHAR.match(w))
    terms = dict.fromkeys(t for w in seen for t in _terms(w))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


class FullText(StoreBase):
    """Node text in each space's FTS5 table (see `search_tables`), rowid = node id."""

    def index_texts(self, space: str, rows: Iterable[tuple[int, str, str, str | None]]) -> None:
        """Write (or rewrite) the full-text rows of (node id, kind, text, speaker) of one
        space. Call inside a transaction."""
        table = str(search_tables.text_table(self.db, space, create=True))
        self.conn.executemany(
            sql.insert(table, ("rowid", "text", "speaker", "kind"), "REPLACE"),
            [
                (node_id, indexed_text(text), speaker or "", kind)
                for node_id, kind, text, speaker in rows
            ],
        )

    def index_text(
        self, space: str, node_id: int, kind: str, text: str, speaker: str | None
    ) -> None:
        """Write (or rewrite) a node's full-text row. Call inside a transaction."""
        self.index_texts(space, [(node_id, kind, text, speaker)])

    def index_cjk_again(self, rows: Iterable[tuple[int, str, str, str, str | None]]) -> int:
        """Rewrite the full-text rows of the nodes, of (id, space, kind, text, speaker), whose
        text holds CJK characters: a store indexed before they were split finds them then.
        Call inside a transaction; returns how many rows were rewritten."""
        by_space: dict[str, list[tuple[int, str, str, str | None]]] = {}
        for node_id, space, kind, text, speaker in rows:
            if _CJK_CHAR.search(text):
                by_space.setdefault(space, []).append((node_id, kind, text, speaker))
        for space, items in by_space.items():
            self.index_texts(space, items)
        return sum(map(len, by_space.values()))

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
