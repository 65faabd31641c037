"""Full-text search over node text with FTS5 and BM25 (memcli.store.search holds what the
Postgres store indexes and asks the same way: the terms, CJK text and the turn context)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memcli.store.listing import ORGANISER_KINDS
from memcli.store.search import (
    CONTEXT_TURNS,
    CONTEXT_WEIGHT,
    TextRows,
    best_rows,
    indexed_text,
    query_terms,
    turn_context,
)
from memcli.store.sqlite import search_tables, sql
from memcli.store.sqlite.base import StoreBase
from memcli.store.sqlite.words import count_words

if TYPE_CHECKING:
    from sqlite_utils import Database


def fts_query(text: str) -> str:
    """An FTS5 MATCH expression: every distinct content word, quoted, OR-ed together (for
    CJK text, its character pairs as phrases)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in query_terms(text))


class FullText(StoreBase, TextRows):
    """Node text in each space's FTS5 table (see `search_tables`), rowid = node id."""

    def index_texts(self, space: str, rows: Iterable[tuple[int, str, str, str | None]]) -> None:
        """Write (or rewrite) the full-text rows of (node id, kind, text, speaker) of one
        space, turns with their context, organisers in their own table. Call inside a
        transaction."""
        table = str(search_tables.text_table(self.db, space, create=True))
        rows = list(rows)
        turns = [(i, indexed_text(text)) for i, kind, text, _ in rows if kind == "episode"]
        if turns:  # a turn indexed again first takes its old words away
            count_words(self.conn, space, self._turn_texts(table, [i for i, _ in turns]), -1)
            count_words(self.conn, space, (text for _, text in turns), 1)
        for name, part in ((table, False), (table + search_tables.ORGANISERS, True)):
            self.conn.executemany(
                sql.insert(name, ("rowid", "text", "speaker", "kind", "context"), "REPLACE"),
                [
                    (node_id, indexed_text(text), speaker or "", kind, "")
                    for node_id, kind, text, speaker in rows
                    if (kind in ORGANISER_KINDS) == part
                ],
            )
        self.index_context([node_id for node_id, kind, _, _ in rows if kind == "episode"])

    def index_context(self, turns: Iterable[int], removed: bool = False) -> None:
        """Rewrite the context of these turns and of the turns after them (see
        `write_context`). Call inside a transaction."""
        write_context(self.db, turns, removed)

    def unindex_text(self, rows: Iterable[tuple[int, str]]) -> None:
        """Remove the full-text rows of (node id, space) pairs. Call inside a transaction."""
        by_space: dict[str, list[int]] = {}
        for node_id, space in rows:
            by_space.setdefault(space, []).append(node_id)
        for space, ids in by_space.items():
            table = search_tables.text_table(self.db, space)
            if table is not None:
                count_words(self.conn, space, self._turn_texts(table, ids), -1)
                for name in (table, table + search_tables.ORGANISERS):
                    self.table(name).delete_where(sql.in_json("rowid"), [json.dumps(ids)])

    def _turn_texts(self, table: str, ids: list[int]) -> list[str]:
        """The indexed texts of those of these rows that are turns."""
        rows = self.conn.execute(sql.turn_texts_of(table), [json.dumps(ids)])
        return [str(r[0]) for r in rows]

    def optimize_text(self) -> None:
        """Merge every full-text index (FTS5 keeps deleted terms in old segments until a
        merge) and drop the tables of spaces that hold no node any more."""
        nodes = self.table("nodes")
        for space, table in search_tables.text_tables(self.db):
            if any(nodes.rows_where("space = ?", [space], select="1", limit=1)):
                self.conn.execute(sql.optimize_text_table(table))
                self.conn.execute(sql.optimize_text_table(table + search_tables.ORGANISERS))
            else:
                search_tables.drop_text_table(self.db, space, table)

    def text_search(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, BM25 score, higher is better) for a free-text query within a space."""
        rows = self._search(space, query, limit, kinds, sql.text_search)
        return [(int(r[0]), float(r[1])) for r in rows]

    def text_search_columns(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float, float, float, float]]:
        """As `text_search`, each row with its columns' own BM25 (higher is better):
        (node id, weighted total, text, speaker, context)."""
        rows = self._search(space, query, limit, kinds, sql.text_search_columns)
        return [(int(r[0]), float(r[1]), float(r[2]), float(r[3]), float(r[4])) for r in rows]

    def _search(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None,
        statement: Callable[[str, int, float], str],
    ) -> list[Any]:  # fmt: skip
        """The best `limit` rows of `statement` over the tables holding these kinds (the
        memories' and the organisers': each row scored within its own table)."""
        match = fts_query(query)
        if not match or limit <= 0:
            return []
        parts = [
            self.conn.execute(
                statement(table, len(wanted), CONTEXT_WEIGHT), [match, *wanted, int(limit)]
            ).fetchall()
            for table, wanted in search_tables.tables_for(self.conn, space, kinds)
        ]
        return best_rows(parts, limit)

    def speaker_named(self, space: str, word: str) -> str | None:
        """The speaker of the space's memories whose name holds this word (any case), or
        None: whether a word of a question names someone who speaks in the space."""
        table = search_tables.find_text_table(self.conn, space)
        term = word.replace('"', '""')
        if table is None or not term.strip():
            return None
        row = self.conn.execute(sql.speaker_named(table), [f'speaker : "{term}"']).fetchone()
        return str(row[0]) if row is not None and row[0] else None


def _runs(conn: Any, turns: Iterable[int]) -> list[tuple[str, str | None, int, int, set[int]]]:
    """(space, session, lowest seq, highest seq, ids) of the given turns, per session."""
    ids = list(dict.fromkeys(turns))
    if not ids:
        return []
    runs: dict[tuple[str, str | None], list[tuple[int, int]]] = {}
    for node_id, space, session, seq in conn.execute(sql.TURN_PLACES, [json.dumps(ids)]):
        runs.setdefault((space, session), []).append((int(seq), int(node_id)))
    return [
        (space, session, min(p)[0], max(p)[0], {i for _, i in p})
        for (space, session), p in runs.items()
    ]


def _session_window(
    conn: Any, space: str, session: str | None, lo: int, hi: int
) -> list[tuple[int, int, str]]:
    """(id, seq, text) of a session's turns from CONTEXT_TURNS before position `lo` to
    CONTEXT_TURNS after `hi`, in order."""
    before = conn.execute(sql.TURNS_BEFORE, [space, session, lo, CONTEXT_TURNS]).fetchall()
    inside = conn.execute(sql.TURNS_BETWEEN, [space, session, lo, hi]).fetchall()
    after = conn.execute(sql.TURNS_AFTER, [space, session, hi, CONTEXT_TURNS]).fetchall()
    return [(int(i), int(q), str(t)) for i, q, t in [*reversed(before), *inside, *after]]


def write_context(db: Database, turns: Iterable[int], removed: bool = False) -> None:
    """Rewrite the full-text context of these turns and of the turns that follow them,
    whose context they are; with `removed` (the turns are about to be deleted) only that of
    their followers, as if the turns were gone."""
    for space, session, lo, hi, ids in _runs(db.conn, turns):
        window = _session_window(db.conn, space, session, lo, hi)
        kept = [w for w in window if not (removed and w[0] in ids)]
        # The turns whose context may change: the given ones and every later one shown.
        first = min(i for i, w in enumerate(window) if w[0] in ids)
        changed = {w[0] for w in window[first:]} - (ids if removed else set())
        updates = [
            (turn_context(kept[max(0, i - CONTEXT_TURNS) : i]), w[0])  # (a long session: no copies)
            for i, w in enumerate(kept)
            if w[0] in changed
        ]
        table = search_tables.text_table(db, space)
        if table is not None:
            db.conn.executemany(sql.set_text_context(table), updates)
