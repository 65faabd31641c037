"""The words of each space's turns, counted and embedded (as memcli.store.words explains)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memcli.store.pg.base import PgBase
from memcli.store.words import Matrix, word_counts

EPOCH_KEY = "words.epoch"  # renewed by every write of word vectors
_ADD = (
    "INSERT INTO words (space, word, turns) VALUES (%s, %s, %s)"
    " ON CONFLICT (space, word) DO UPDATE SET turns = words.turns + excluded.turns"
)
_TAKE = "UPDATE words SET turns = turns - %s WHERE space = %s AND word = %s"
_AMONG = "(%(among)s::text[] IS NULL OR word = ANY(%(among)s::text[]))"
_BY_WORD = 'word COLLATE "C"'  # code point order, as SQLite sorts text
_UNEMBEDDED = f"FROM words WHERE space = %(space)s AND vector IS NULL AND {_AMONG}"


def count_words(store: PgBase, space: str, texts: Iterable[str], step: int) -> None:
    """Add (step 1) or take away (step -1) the words of these turns' texts; a word left in
    no turn is deleted. Call inside a transaction."""
    counts = word_counts(texts)
    if not counts:
        return
    if step > 0:  # sorted: concurrent writers lock rows in one order
        store.run_many(_ADD, [(space, w, n) for w, n in sorted(counts.items())])
        return
    store.run_many(_TAKE, [(n, space, w) for w, n in sorted(counts.items())])
    store.run(
        "DELETE FROM words WHERE space = %s AND word = ANY(%s::text[]) AND turns <= 0",
        (space, sorted(counts)),
    )


class Words(PgBase):
    """Reading and embedding the words of a space's turns."""

    _matrices: dict[str, tuple[tuple[str | None, int], Matrix]] | None = None

    def unembedded_words(
        self, space: str, limit: int | None = None, among: Sequence[str] | None = None
    ) -> list[str]:
        """Words of the space's turns without a vector yet (of those `among` these words,
        when given), alphabetically."""
        args = {"space": space, "among": None if among is None else list(among), "limit": limit}
        rows = self.run(f"SELECT word {_UNEMBEDDED} ORDER BY {_BY_WORD} LIMIT %(limit)s", args)
        return [str(r[0]) for r in rows]

    def word_spaces(self) -> list[str]:
        """The spaces whose turns have words."""
        rows = self.run('SELECT DISTINCT space COLLATE "C" FROM words ORDER BY 1')
        return [str(r[0]) for r in rows]

    def count_unembedded_words(self, space: str, among: Sequence[str] | None = None) -> int:
        args = {"space": space, "among": None if among is None else list(among)}
        return int(self.run(f"SELECT count(*) {_UNEMBEDDED}", args).fetchone()[0])

    def put_word_vectors(self, space: str, rows: Sequence[tuple[str, Any]]) -> None:
        """Store (word, vector) pairs of a space. Call inside a transaction."""
        self.run_many(
            "UPDATE words SET vector = %s WHERE space = %s AND word = %s",
            [(np.asarray(v, dtype=np.float32).tobytes(), space, w) for w, v in rows],
        )
        self.set_meta(EPOCH_KEY, os.urandom(8).hex())

    def forget_word_vectors(self) -> int:
        """Clear every word's vector (the embedding model changed); how many were."""
        cleared = self.run("UPDATE words SET vector = NULL WHERE vector IS NOT NULL").rowcount
        self.set_meta(EPOCH_KEY, os.urandom(8).hex())
        return int(cleared)

    def word_vector_rows(self, space: str) -> Iterable[tuple[str, bytes]]:
        """(word, stored vector bytes) of the space's embedded words, alphabetically."""
        rows = self.run(
            "SELECT word, vector FROM words WHERE space = %s AND vector IS NOT NULL"
            f" ORDER BY {_BY_WORD}",
            (space,),
        ).fetchall()
        return [(str(w), bytes(v)) for w, v in rows]

    def word_vectors(self, space: str, words: Sequence[str]) -> dict[str, Any]:
        """The stored vectors of these words of a space (words without one are left out)."""
        rows = self.run(
            "SELECT word, vector FROM words WHERE space = %s AND vector IS NOT NULL"
            " AND word = ANY(%s::text[])",
            (space, list(words)),
        )
        return {str(w): np.frombuffer(bytes(v), dtype=np.float32) for w, v in rows}

    def _words_stamp(self, space: str) -> tuple[str | None, int]:
        """Moves whenever the space's embedded words change: a counter every vector write
        renews, and how many there are (a forgotten turn takes its words away)."""
        row = self.run(
            "SELECT (SELECT value FROM meta WHERE key = %s),"
            " (SELECT count(*) FROM words WHERE space = %s AND vector IS NOT NULL)",
            (EPOCH_KEY, space),
        ).fetchone()
        return row[0], int(row[1])

    def word_matrix(self, space: str) -> Matrix:
        """The space's embedded words and their vectors as the rows of one matrix, read
        once and kept while they stay the same."""
        if self._matrices is None:
            self._matrices = {}
        stamp = self._words_stamp(space)
        kept = self._matrices.get(space)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        rows = list(self.word_vector_rows(space))
        words = [w for w, _ in rows]
        matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float32) if rows else None
        found: Matrix = (words, None if matrix is None else matrix.reshape(len(rows), -1))
        if not self.in_transaction():  # a rollback could take those rows back
            self._matrices[space] = (stamp, found)
        return found
