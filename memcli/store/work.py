"""Bookkeeping for consolidation: the LLM cache, runs, per-stage progress marks and locks."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from memcli.store import sql
from memcli.store.base import StoreBase, now_iso

# Counters a run accumulates; they mirror columns of the `runs` table.
RUN_COUNTERS = (
    "items",
    "nodes",
    "edges",
    "llm_calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "failures",
)

# Written once per unit of consolidation work: kept to one statement each.
_MARK = sql.insert("processed", ("space", "stage", "node"), "IGNORE")

# Held by a consolidation run, and by prune (which must not remove episodes under it).
CONSOLIDATION_LOCK = "consolidate"


@dataclass
class CachedReply:
    response: str
    prompt_tokens: int
    completion_tokens: int


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


class Work(StoreBase):
    """The `llm_cache`, `runs`, `processed` and `locks` tables."""

    # -- LLM cache (called from model threads) -------------------------------------

    def cache_get(self, key: str) -> CachedReply | None:
        """A cached model reply, or None."""
        with self._lock:
            row = self.conn.execute(sql.CACHE_GET, (key,)).fetchone()
        return CachedReply(*row) if row else None

    def cache_put(self, key: str, provider: str, model: str, reply: CachedReply) -> None:
        """Remember a model reply; committed at once so a crash later loses no call. A
        read-only store (see `open_store`) answers without remembering."""
        if self.read_only is not None:
            return
        usage = (reply.prompt_tokens, reply.completion_tokens)
        with self._lock:
            self.conn.execute(
                sql.CACHE_PUT, (key, provider, model, reply.response, *usage, now_iso())
            )

    def cache_delete(self, key: str) -> None:
        """Drop one cached reply."""
        if self.read_only is not None:
            return
        with self._lock:
            self.conn.execute(sql.CACHE_DELETE, (key,))

    # -- runs --------------------------------------------------------------------

    def run_start(self, space: str, stage: str) -> int:
        """Open a `runs` row for one stage of one consolidation."""
        runs = self.table("runs")
        runs.insert({"space": space, "stage": stage, "status": "running", "started_at": now_iso()})
        return int(runs.last_rowid or 0)

    def run_finish(
        self,
        run_id: int,
        status: str,
        counters: dict[str, int],
        last_error: str | None,
        extra: dict[str, int] | None = None,
    ) -> None:
        """Close a run with its final counters (and its stage-specific counts)."""
        fields: dict[str, Any] = {"status": status, "finished_at": now_iso()}
        fields["last_error"] = last_error
        fields.update((name, int(counters.get(name, 0))) for name in RUN_COUNTERS)
        fields["extra"] = json.dumps(extra or {}, sort_keys=True)
        self.table("runs").update(run_id, fields)

    def last_runs(self, space: str) -> list[dict[str, Any]]:
        """The most recent run of each stage in a space (`extra` parsed)."""
        rows = list(self.db.query(sql.LAST_RUNS, [space]))
        for row in rows:
            row["extra"] = json.loads(row.get("extra") or "{}")
        return rows

    def run_page(self, space: str, limit: int, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Consolidation runs of a space, newest first (`extra` parsed), and how many."""
        with self.reading():
            total = int(self.conn.execute(sql.RUNS_COUNT, (space,)).fetchone()[0])
            rows = list(self.db.query(sql.RUNS_PAGE, [space, limit, offset]))
        for row in rows:
            row["extra"] = json.loads(row.get("extra") or "{}")
        return rows, total

    def run_extra_totals(self, space: str, stage: str) -> dict[str, int]:
        """A stage's stage-specific counts summed over every run of a space."""
        totals: dict[str, int] = {}
        for (extra,) in self.conn.execute(sql.RUN_EXTRAS, (space, stage)):
            for key, value in json.loads(extra or "{}").items():
                totals[key] = totals.get(key, 0) + int(value)
        return totals

    def run_totals(self, space: str) -> dict[str, int]:
        """Counters summed over every run of a space."""
        row = self.conn.execute(sql.run_totals(RUN_COUNTERS), (space,)).fetchone()
        return dict(zip(RUN_COUNTERS, row, strict=True))

    def runs_interrupted(self, space: str) -> int:
        """Close rows a killed run left `running` as `interrupted`. Call holding the lock."""
        return int(self.conn.execute(sql.RUNS_INTERRUPTED, (now_iso(), space)).rowcount)

    # -- per-stage progress marks -----------------------------------------------

    def mark_processed(self, space: str, stage: str, node_ids: Iterable[int]) -> None:
        """Record that a stage has consumed these nodes. Call inside the unit's transaction."""
        self.conn.executemany(_MARK, [(space, stage, n) for n in node_ids])

    def unprocessed(self, space: str, stage: str, kind: str = "episode") -> list[int]:
        """Ids of a kind's nodes that a stage has not consumed yet, oldest first."""
        return [r[0] for r in self.conn.execute(sql.UNPROCESSED, (space, kind, stage))]

    def processed_among(self, stage: str, node_ids: Sequence[int]) -> set[int]:
        """Which of the given nodes a stage has consumed."""
        rows = self.conn.execute(sql.PROCESSED_AMONG, (stage, json.dumps(list(node_ids))))
        return {r[0] for r in rows}

    # -- locks ------------------------------------------------------------------

    def try_lock(self, name: str) -> dict[str, Any] | None:
        """Take a named lock; return None on success or the live holder's details.

        A lock whose holder died (same host, process gone) is taken over.
        """
        host = socket.gethostname()
        locks = self.table("locks")
        with self.transaction():
            for row in list(locks.rows_where("name = ?", [name])):
                alive = row["host"] != host or _pid_alive(row["pid"])
                if alive and row["pid"] != os.getpid():
                    return {"pid": row["pid"], "host": row["host"], "since": row["acquired_at"]}
            lock = {"name": name, "pid": os.getpid(), "host": host, "acquired_at": now_iso()}
            locks.insert(lock, replace=True)
        return None

    def unlock(self, name: str) -> None:
        """Release a lock this process holds."""
        with self.transaction():
            self.table("locks").delete_where(
                "name = ? AND pid = ? AND host = ?", [name, os.getpid(), socket.gethostname()]
            )

    @contextmanager
    def consolidation_lock(self) -> Iterator[dict[str, Any] | None]:
        """Hold the consolidation lock for the block, yielding None; or, when a live process
        holds it, yield that holder's details (pid, host, since) and take nothing."""
        holder = self.try_lock(CONSOLIDATION_LOCK)
        if holder is not None:
            yield holder
            return
        try:
            yield None
        finally:
            self.unlock(CONSOLIDATION_LOCK)
