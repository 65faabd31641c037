"""Bookkeeping for consolidation in Postgres: the model reply cache, runs, progress marks,
and the consolidation lock as an advisory lock.

The consolidation lock is a session-level advisory lock on the store's schema: the server
holds it for the connection that took it and releases it when that connection ends,
however its process died, on whichever host it ran. A `locks` row says who holds it, for
the message a refused process shows.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memcli.errors import DatabaseError
from memcli.store.base import now_iso
from memcli.store.pg.base import PgBase
from memcli.store.pg.connect import lock_key
from memcli.store.work import CONSOLIDATION_LOCK, RUN_COUNTERS, CachedReply


def _dicts(cur: Any) -> list[dict[str, Any]]:
    names = [d.name for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


class Work(PgBase):
    """The `llm_cache`, `runs`, `processed` and `locks` tables, and advisory locks."""

    # -- LLM cache: on the side connection, committed at once, from any thread ------

    def cache_get(self, key: str) -> CachedReply | None:
        """A cached model reply, or None."""
        with self._lock:
            row = (
                self.side_conn()
                .execute(
                    "SELECT response, prompt_tokens, completion_tokens FROM llm_cache"
                    " WHERE key = %s",
                    (key,),
                )
                .fetchone()
            )
        return CachedReply(*row) if row else None

    def cache_put(self, key: str, provider: str, model: str, reply: CachedReply) -> None:
        """Remember a model reply, committed at once (a read-only store only answers)."""
        if self.read_only is not None:
            return
        with self._lock:
            self.side_conn().execute(
                "INSERT INTO llm_cache (key, provider, model, response, prompt_tokens,"
                " completion_tokens, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (key) DO UPDATE SET provider = excluded.provider,"
                " model = excluded.model, response = excluded.response,"
                " prompt_tokens = excluded.prompt_tokens,"
                " completion_tokens = excluded.completion_tokens,"
                " created_at = excluded.created_at",
                (key, provider, model, reply.response, reply.prompt_tokens,
                 reply.completion_tokens, now_iso()),
            )  # fmt: skip

    def cache_delete(self, key: str) -> None:
        """Drop one cached reply."""
        if self.read_only is not None:
            return
        with self._lock:
            self.side_conn().execute("DELETE FROM llm_cache WHERE key = %s", (key,))

    def llm_cache_size(self) -> int:
        """How many model replies the cache holds."""
        return int(self.run("SELECT count(*) FROM llm_cache").fetchone()[0])

    def clear_llm_cache(self) -> int:
        """Empty the model reply cache; how many replies it held."""
        return int(self.run("DELETE FROM llm_cache").rowcount)

    # -- runs --------------------------------------------------------------------

    def run_start(self, space: str, stage: str) -> int:
        """Open a `runs` row for one stage of one consolidation."""
        row = self.run(
            "INSERT INTO runs (space, stage, status, started_at) VALUES (%s, %s, 'running', %s)"
            " RETURNING id",
            (space, stage, now_iso()),
        ).fetchone()
        return int(row[0])

    def run_finish(
        self,
        run_id: int,
        status: str,
        counters: dict[str, int],
        last_error: str | None,
        extra: dict[str, int] | None = None,
    ) -> None:
        """Close a run with its final counters (and its stage-specific counts)."""
        sets = ", ".join(f"{name} = %s" for name in RUN_COUNTERS)
        self.run(
            f"UPDATE runs SET status = %s, finished_at = %s, last_error = %s, extra = %s, {sets}"
            " WHERE id = %s",
            (status, now_iso(), last_error, json.dumps(extra or {}, sort_keys=True),
             *(int(counters.get(name, 0)) for name in RUN_COUNTERS), run_id),
        )  # fmt: skip

    def last_runs(self, space: str) -> list[dict[str, Any]]:
        """The most recent run of each stage in a space (`extra` parsed)."""
        rows = _dicts(
            self.run(
                "SELECT * FROM runs WHERE id IN (SELECT max(id) FROM runs WHERE space = %s"
                " GROUP BY stage) ORDER BY id",
                (space,),
            )
        )
        for row in rows:
            row["extra"] = json.loads(row.get("extra") or "{}")
        return rows

    def run_page(self, space: str, limit: int, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Consolidation runs of a space, newest first (`extra` parsed), and how many."""
        with self.reading():
            total = self.run("SELECT count(*) FROM runs WHERE space = %s", (space,)).fetchone()
            rows = _dicts(
                self.run(
                    "SELECT * FROM runs WHERE space = %s ORDER BY id DESC LIMIT %s OFFSET %s",
                    (space, limit, offset),
                )
            )
        for row in rows:
            row["extra"] = json.loads(row.get("extra") or "{}")
        return rows, int(total[0])

    def run_extra_totals(self, space: str, stage: str) -> dict[str, int]:
        """A stage's stage-specific counts summed over every run of a space."""
        totals: dict[str, int] = {}
        rows = self.run("SELECT extra FROM runs WHERE space = %s AND stage = %s", (space, stage))
        for (extra,) in rows:
            for key, value in json.loads(extra or "{}").items():
                totals[key] = totals.get(key, 0) + int(value)
        return totals

    def run_totals(self, space: str) -> dict[str, int]:
        """Counters summed over every run of a space."""
        sums = ", ".join(f"COALESCE(sum({name}), 0)" for name in RUN_COUNTERS)
        row = self.run(f"SELECT {sums} FROM runs WHERE space = %s", (space,)).fetchone()
        return {name: int(value) for name, value in zip(RUN_COUNTERS, row, strict=True)}

    def runs_interrupted(self, space: str) -> int:
        """Close rows a killed run left `running` as `interrupted`. Call holding the lock."""
        return int(
            self.run(
                "UPDATE runs SET status = 'interrupted', finished_at = %s"
                " WHERE space = %s AND status = 'running'",
                (now_iso(), space),
            ).rowcount
        )

    def delete_runs(self, space: str) -> int:
        """Remove the consolidation history of a space."""
        return int(self.run("DELETE FROM runs WHERE space = %s", (space,)).rowcount)

    # -- per-stage progress marks -----------------------------------------------

    def mark_processed(self, space: str, stage: str, node_ids: Iterable[int]) -> None:
        """Record that a stage has consumed these nodes. Call inside the unit's transaction."""
        self.run(
            "INSERT INTO processed (space, stage, node) SELECT %s, %s, n"
            " FROM unnest(%s::bigint[]) AS n ON CONFLICT DO NOTHING",
            (space, stage, sorted({int(n) for n in node_ids})),
        )

    def unprocessed(self, space: str, stage: str, kind: str = "episode") -> list[int]:
        """Ids of a kind's nodes that a stage has not consumed yet, oldest first."""
        rows = self.run(
            "SELECT n.id FROM nodes n WHERE n.space = %s AND n.kind = %s AND NOT EXISTS"
            " (SELECT 1 FROM processed p WHERE p.stage = %s AND p.node = n.id)"
            ' ORDER BY n.session COLLATE "C" NULLS FIRST, n.seq NULLS FIRST, n.id',
            (space, kind, stage),
        )
        return [int(r[0]) for r in rows]

    def processed_among(self, stage: str, node_ids: Sequence[int]) -> set[int]:
        """Which of the given nodes a stage has consumed."""
        rows = self.run(
            "SELECT node FROM processed WHERE stage = %s AND node = ANY(%s::bigint[])",
            (stage, [int(n) for n in node_ids]),
        )
        return {int(r[0]) for r in rows}

    def count_failed(self, space: str, stage: str, node_ids: Iterable[int]) -> dict[int, int]:
        """One more failed run of a stage's unit counted against each of these nodes; how
        many each has now. Call inside the unit's transaction."""
        rows = self.run(
            "INSERT INTO unit_failures (space, stage, node, runs) SELECT %s, %s, n, 1"
            " FROM unnest(%s::bigint[]) AS n ON CONFLICT (stage, node)"
            " DO UPDATE SET runs = unit_failures.runs + 1 RETURNING node, runs",
            (space, stage, sorted({int(n) for n in node_ids})),
        )
        return {int(r[0]): int(r[1]) for r in rows}

    # -- locks ------------------------------------------------------------------

    def try_lock(self, name: str) -> dict[str, Any] | None:
        """Take a named lock; None on success, else its holder's details (pid, host, since,
        state `running`: the server holds the lock for a live connection only)."""
        key = lock_key(self.schema, name)
        if not self.run("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            holder = self._holder(name)
            return {**holder, "state": "running"}
        self.run(
            "INSERT INTO locks (name, pid, host, acquired_at) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (name) DO UPDATE SET pid = excluded.pid, host = excluded.host,"
            " acquired_at = excluded.acquired_at",
            (name, os.getpid(), socket.gethostname(), now_iso()),
        )
        return None

    def _holder(self, name: str) -> dict[str, Any]:
        """Who the `locks` row says holds a lock."""
        row = self.run(
            "SELECT pid, host, acquired_at FROM locks WHERE name = %s", (name,)
        ).fetchone()
        pid, host, since = row if row else (None, "another connection", None)
        return {"pid": pid, "host": host, "since": since}

    def force_unlock(self, name: str) -> dict[str, Any] | None:
        """Clear a lock's holder row when no connection holds the lock (the details it
        named, or None); DatabaseError while one does: the server frees the lock itself
        when its holder's connection ends, so a live lock is never taken away."""
        key = lock_key(self.schema, name)
        if not self.run("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            holder = self._holder(name)
            raise DatabaseError(
                f"the {name} lock is held by pid {holder['pid']} on host {holder['host']} "
                f"(since {holder['since']}), whose connection to the server is open; it was "
                "left in place",
                fix="wait for it to finish, or stop that process: the server frees the lock "
                "the moment its connection ends",
            )
        try:
            found = self.run("SELECT 1 FROM locks WHERE name = %s", (name,)).fetchone()
            removed = self._holder(name) if found else None
            self.run("DELETE FROM locks WHERE name = %s", (name,))
        finally:
            self.run("SELECT pg_advisory_unlock(%s)", (key,))
        return removed

    def unlock(self, name: str) -> None:
        """Release a lock this store's connection holds."""
        self.run(
            "DELETE FROM locks WHERE name = %s AND pid = %s AND host = %s",
            (name, os.getpid(), socket.gethostname()),
        )
        self.run("SELECT pg_advisory_unlock(%s)", (lock_key(self.schema, name),))

    @contextmanager
    def consolidation_lock(
        self, refused: str = "nothing was done"
    ) -> Iterator[dict[str, Any] | None]:
        """Hold the consolidation lock for the block, yielding None; or, when another
        connection holds it, yield the holder's details and take nothing. (Unlike a lock
        in a file, a holder on another host is known to be alive: `refused` is never
        needed.)"""
        holder = self.try_lock(CONSOLIDATION_LOCK)
        if holder is not None:
            yield holder
            return
        try:
            yield None
        finally:
            self.unlock(CONSOLIDATION_LOCK)
