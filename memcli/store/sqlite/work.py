"""Bookkeeping for consolidation in SQLite: the LLM cache, runs, per-stage progress marks
and locks."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from memcli.errors import DatabaseError
from memcli.store.base import now_iso
from memcli.store.sqlite import sql
from memcli.store.sqlite.base import StoreBase
from memcli.store.work import CONSOLIDATION_LOCK, RUN_COUNTERS, CachedReply

# Written once per unit of consolidation work: kept to one statement each.
_MARK = sql.insert("processed", ("space", "stage", "node"), "IGNORE")
_FAILED = (
    "INSERT INTO unit_failures (space, stage, node, runs) VALUES (?, ?, ?, 1)"
    " ON CONFLICT (stage, node) DO UPDATE SET runs = runs + 1"
)
_FAILED_RUNS = f"SELECT node, runs FROM unit_failures WHERE stage = ? AND {sql.in_json('node')}"


def _host() -> str:
    """This machine's name, as a lock records it (socket is imported only for locks)."""
    import socket

    return socket.gethostname()


UNLOCK_COMMAND = "memcli consolidate --unlock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True


def _started_at(pid: int) -> float | None:
    """When a process on this machine started, in Unix seconds (None where /proc cannot
    say: not Linux, or the process is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def unverifiable_holder(holder: dict[str, Any], outcome: str) -> DatabaseError:
    """The error for a consolidation lock held on another host or container, which this
    host cannot check; `outcome` says what was (not) done."""
    return DatabaseError(
        f"the consolidation lock is held by pid {holder['pid']} on host {holder['host']} "
        f"(since {holder['since']}), which cannot be checked from here; {outcome}",
        fix=f"if no memcli consolidate is running there any more (a stopped container, a "
        f"copied store), release the lock with `{UNLOCK_COMMAND}` and run again",
    )


def holder_state(row: dict[str, Any]) -> str:
    """`running` (its process is alive here), `gone` (it died, or its pid now belongs to a
    process started after the lock was taken), or `unknown` (another host or container,
    where nothing can be checked)."""
    if row["host"] != _host():
        return "unknown"
    if not _pid_alive(row["pid"]):
        return "gone"
    started = _started_at(row["pid"])
    taken = datetime.fromisoformat(row["acquired_at"]).timestamp()
    # A second of slack: the lock's time is kept to the second, the start time is not.
    return "gone" if started is not None and started > taken + 1 else "running"


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

    def count_failed(self, space: str, stage: str, node_ids: Iterable[int]) -> dict[int, int]:
        """One more failed run of a stage's unit counted against each of these nodes; how
        many each has now. Call inside the unit's transaction."""
        ids = sorted({int(n) for n in node_ids})
        self.conn.executemany(_FAILED, [(space, stage, n) for n in ids])
        return dict(self.conn.execute(_FAILED_RUNS, (stage, json.dumps(ids))).fetchall())

    # -- locks ------------------------------------------------------------------

    def try_lock(self, name: str) -> dict[str, Any] | None:
        """Take a named lock; return None on success or the holder's details (pid, host,
        since, and `state`: running, or unknown when it is on another host or container).

        A lock whose holder is gone (same host: the process died, or its pid was reused by
        a later process) is taken over.
        """
        host = _host()
        locks = self.table("locks")
        with self.transaction():
            for row in list(locks.rows_where("name = ?", [name])):
                state = holder_state(row)
                if state != "gone" and not (row["pid"] == os.getpid() and row["host"] == host):
                    return {
                        "pid": row["pid"], "host": row["host"], "since": row["acquired_at"],
                        "state": state,
                    }  # fmt: skip
            lock = {"name": name, "pid": os.getpid(), "host": host, "acquired_at": now_iso()}
            locks.insert(lock, replace=True)
        return None

    def force_unlock(self, name: str) -> dict[str, Any] | None:
        """Remove a lock whose holder cannot be running (or cannot be checked): the details
        of the lock removed, or None when none was held. DatabaseError when its process
        is alive on this host."""
        locks = self.table("locks")
        with self.transaction():
            rows = list(locks.rows_where("name = ?", [name]))
            for row in rows:
                if holder_state(row) == "running" and row["pid"] != os.getpid():
                    raise DatabaseError(
                        f"the {name} lock is held by pid {row['pid']}, which is running on "
                        f"this host (since {row['acquired_at']}); it was left in place",
                        fix=f"wait for it to finish, or stop it (kill {row['pid']})",
                    )
            locks.delete_where("name = ?", [name])
        return None if not rows else {
            "pid": rows[0]["pid"], "host": rows[0]["host"], "since": rows[0]["acquired_at"]
        }  # fmt: skip

    def unlock(self, name: str) -> None:
        """Release a lock this process holds."""
        with self.transaction():
            self.table("locks").delete_where(
                "name = ? AND pid = ? AND host = ?", [name, os.getpid(), _host()]
            )

    @contextmanager
    def consolidation_lock(
        self, refused: str = "nothing was done"
    ) -> Iterator[dict[str, Any] | None]:
        """Hold the consolidation lock for the block, yielding None; or, when a live process
        holds it, yield that holder's details (pid, host, since) and take nothing. A holder
        on another host, which cannot be checked, is a DatabaseError ending in `refused`."""
        holder = self.try_lock(CONSOLIDATION_LOCK)
        if holder is not None and holder["state"] == "unknown":
            raise unverifiable_holder(holder, refused)
        if holder is not None:
            yield holder
            return
        try:
            yield None
        finally:
            self.unlock(CONSOLIDATION_LOCK)
