"""The words of each space's turns in SQLite: counted, embedded, read as one matrix
(memcli.store.words says what they are for)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from memcli.store.sqlite import sql
from memcli.store.sqlite.base import StoreBase
from memcli.store.sqlite.read_cache import file_stamp
from memcli.store.words import Matrix, word_counts


def count_words(conn: Any, space: str, texts: Iterable[str], step: int) -> None:
    """Add (step 1) or take away (step -1) the words of these turns' texts; a word left in
    no turn is deleted. Call inside a transaction."""
    counts = word_counts(texts)
    if not counts:
        return
    rows = [(space, word, step * n) for word, n in counts.items()]
    if step > 0:
        conn.executemany(sql.WORDS_ADD, rows)
    else:
        conn.executemany(sql.WORDS_TAKE, [(-n, s, w) for s, w, n in rows])
        conn.execute(sql.WORDS_DROP_UNUSED, [space])


def _among(words: Sequence[str] | None) -> str | None:
    """A word filter as bound to WORDS_UNEMBEDDED*: a JSON array, or NULL for every word."""
    return None if words is None else json.dumps(list(words))


class Words(StoreBase):
    """Reading and embedding the words of a space's turns."""

    # space -> (file stamp when read, its matrix); made on first use
    _matrices: dict[str, tuple[tuple[int, int], Matrix]] | None = None

    def unembedded_words(
        self, space: str, limit: int | None = None, among: Sequence[str] | None = None
    ) -> list[str]:
        """Words of the space's turns that have no vector yet (of those `among` these words,
        when given), in alphabetical order."""
        args: list[Any] = [space, _among(among), -1 if limit is None else limit]
        return [str(r[0]) for r in self.conn.execute(sql.WORDS_UNEMBEDDED, args)]

    def word_spaces(self) -> list[str]:
        """The spaces whose turns have words."""
        return [str(r[0]) for r in self.conn.execute(sql.WORDS_SPACES)]

    def count_unembedded_words(self, space: str, among: Sequence[str] | None = None) -> int:
        args = [space, _among(among)]
        return int(self.conn.execute(sql.WORDS_UNEMBEDDED_COUNT, args).fetchone()[0])

    def put_word_vectors(self, space: str, rows: Sequence[tuple[str, Any]]) -> None:
        """Store (word, vector) pairs of a space. Call inside a transaction."""
        import numpy as np  # numpy only where vectors are (a lexical ask never loads it)

        self.conn.executemany(
            sql.WORDS_PUT_VECTOR,
            [(np.asarray(v, dtype=np.float32).tobytes(), space, w) for w, v in rows],
        )

    def forget_word_vectors(self) -> int:
        """Clear every word's vector (the embedding model changed). Call inside a
        transaction; returns how many were cleared."""
        return int(self.conn.execute(sql.WORDS_CLEAR_VECTORS).rowcount)

    def word_vector_rows(self, space: str) -> Iterable[tuple[str, bytes]]:
        """(word, stored vector bytes) of the space's embedded words, in alphabetical order."""
        for word, blob in self.conn.execute(sql.WORDS_EMBEDDED, [space]):
            yield str(word), bytes(blob)

    def word_vectors(self, space: str, words: Sequence[str]) -> dict[str, Any]:
        """The stored vectors of these words of a space (words without one are left out)."""
        import numpy as np

        found = self.conn.execute(sql.WORDS_VECTORS_OF, [space, json.dumps(list(words))])
        return {str(w): np.frombuffer(v, dtype=np.float32) for w, v in found}

    def word_matrix(self, space: str) -> Matrix:
        """The space's embedded words and their vectors as the rows of one matrix, read
        once and kept while the file stays the same."""
        if self._matrices is None:
            self._matrices = {}
        stamp = file_stamp(self.conn)
        kept = self._matrices.get(space)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        import numpy as np

        rows = self.conn.execute(sql.WORDS_EMBEDDED, [space]).fetchall()
        words = [str(w) for w, _ in rows]
        matrix = np.frombuffer(b"".join(v for _, v in rows), dtype=np.float32) if rows else None
        found: Matrix = (words, None if matrix is None else matrix.reshape(len(rows), -1))
        if not self.conn.in_transaction:  # a rollback could take those rows back
            self._matrices[space] = (stamp, found)
        return found
