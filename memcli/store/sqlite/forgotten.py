"""Tombstones of forgotten turns in SQLite, so that they stay forgotten (memcli.store.prune
says what a tombstone holds and who reads it)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from memcli.store.base import chunked
from memcli.store.prune import Tombstones
from memcli.store.sqlite import sql
from memcli.store.sqlite.base import StoreBase

_ADD = sql.insert("forgotten", ("space", "key", "forgotten_at"), "IGNORE")
_AMONG = f"space = ? AND {sql.in_json('key')}"


class Forgotten(StoreBase, Tombstones):
    """The `forgotten` table: (space, content key of a forgotten turn, when)."""

    def turn_keys(self, space: str, node_ids: Iterable[int]) -> list[str]:
        """The content keys of the turns among these nodes (what their tombstones hold)."""
        keys: list[str] = []
        where = f"space = ? AND kind = 'episode' AND key IS NOT NULL AND {sql.in_json('id')}"
        for part in chunked(sorted(set(node_ids))):
            rows = self.table("nodes").rows_where(
                where, [space, json.dumps(list(part))], select="key"
            )
            keys += [row["key"] for row in rows]
        return keys

    def put_forgotten(self, space: str, rows: Sequence[tuple[str, str]]) -> int:
        """Add (key, forgotten_at) tombstones, keeping any already there; return how many
        were new. Call inside a transaction."""
        before = self.conn.total_changes
        self.conn.executemany(_ADD, [(space, key, when) for key, when in rows])
        return self.conn.total_changes - before

    def forgotten_keys(self, space: str, keys: Sequence[str]) -> set[str]:
        """Which of these turn keys were forgotten in the space."""
        found: set[str] = set()
        for part in chunked(list(dict.fromkeys(keys))):
            rows = self.table("forgotten").rows_where(
                _AMONG, [space, json.dumps(list(part))], select="key"
            )
            found.update(row["key"] for row in rows)
        return found

    def allow_again(self, space: str, keys: Sequence[str]) -> int:
        """Lift the tombstones of these keys (their turns are being stored again); return
        how many there were. Call inside a transaction."""
        lifted = 0
        for part in chunked(list(dict.fromkeys(keys))):
            table = self.table("forgotten")
            args: list[Any] = [space, json.dumps(list(part))]
            lifted += table.count_where(_AMONG, args)
            table.delete_where(_AMONG, args)
        return lifted

    def forgotten_rows(self, space: str) -> list[tuple[str, str]]:
        """(key, forgotten_at) of every tombstone of a space, oldest first (for export)."""
        rows = self.table("forgotten").rows_where(
            "space = ?", [space], order_by="forgotten_at, key", select="key, forgotten_at"
        )
        return [(row["key"], row["forgotten_at"]) for row in rows]

    def count_forgotten(self, space: str) -> int:
        """How many turns of the space are recorded as forgotten."""
        return self.table("forgotten").count_where("space = ?", [space])
