"""Bookkeeping for consolidation: the LLM cache, runs, per-stage progress marks and locks."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memcli.store.nodes import chunked, now_iso

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


class WorkMixin:
    conn: Any
    _lock: threading.Lock

    # -- LLM cache ---------------------------------------------------------------

    def cache_get(self, key: str) -> CachedReply | None:
        """A cached model reply, or None."""
        with self._lock:
            row = self.conn.execute(
                "SELECT response, prompt_tokens, completion_tokens FROM llm_cache WHERE key = ?",
                (key,),
            ).fetchone()
        return CachedReply(*row) if row else None

    def cache_put(self, key: str, provider: str, model: str, reply: CachedReply) -> None:
        """Remember a model reply; committed at once so a crash later loses no call."""
        with self._lock:
            self.conn.execute(
                "INSERT OR REPLACE INTO llm_cache (key, provider, model, response,"
                " prompt_tokens, completion_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    provider,
                    model,
                    reply.response,
                    reply.prompt_tokens,
                    reply.completion_tokens,
                    now_iso(),
                ),
            )

    def cache_delete(self, key: str) -> None:
        """Drop one cached reply."""
        with self._lock:
            self.conn.execute("DELETE FROM llm_cache WHERE key = ?", (key,))

    # -- runs --------------------------------------------------------------------

    def run_start(self, space: str, stage: str) -> int:
        """Open a `runs` row for one stage of one consolidation."""
        cur = self.conn.execute(
            "INSERT INTO runs (space, stage, status, started_at) VALUES (?, ?, 'running', ?)",
            (space, stage, now_iso()),
        )
        return int(cur.lastrowid)

    def run_finish(
        self, run_id: int, status: str, counters: dict[str, int], last_error: str | None
    ) -> None:
        """Close a run with its final counters."""
        cols = ", ".join(f"{name} = ?" for name in RUN_COUNTERS)
        self.conn.execute(
            f"UPDATE runs SET status = ?, finished_at = ?, last_error = ?, {cols} WHERE id = ?",
            (
                status,
                now_iso(),
                last_error,
                *(int(counters.get(n, 0)) for n in RUN_COUNTERS),
                run_id,
            ),
        )

    def last_runs(self, space: str) -> list[dict[str, Any]]:
        """The most recent run of each stage in a space."""
        cur = self.conn.execute(
            "SELECT * FROM runs WHERE id IN (SELECT MAX(id) FROM runs WHERE space = ?"
            " GROUP BY stage) ORDER BY id",
            (space,),
        )
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur]

    def run_totals(self, space: str) -> dict[str, int]:
        """Counters summed over every run of a space."""
        sums = ", ".join(f"COALESCE(SUM({n}), 0)" for n in RUN_COUNTERS)
        row = self.conn.execute(f"SELECT {sums} FROM runs WHERE space = ?", (space,)).fetchone()
        return dict(zip(RUN_COUNTERS, row, strict=True))

    def runs_interrupted(self, space: str) -> int:
        """Close rows a killed run left `running` as `interrupted`. Call holding the lock."""
        cur = self.conn.execute(
            "UPDATE runs SET status = 'interrupted', finished_at = ? WHERE space = ?"
            " AND status = 'running'",
            (now_iso(), space),
        )
        return int(cur.rowcount)

    # -- per-stage progress marks -----------------------------------------------

    def mark_processed(self, space: str, stage: str, node_ids: Iterable[int]) -> None:
        """Record that a stage has consumed these nodes. Call inside the unit's transaction."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO processed (space, stage, node) VALUES (?, ?, ?)",
            [(space, stage, n) for n in node_ids],
        )

    def unprocessed(self, space: str, stage: str, kind: str = "episode") -> list[int]:
        """Ids of a kind's nodes that a stage has not consumed yet, oldest first."""
        rows = self.conn.execute(
            "SELECT n.id FROM nodes n WHERE n.space = ? AND n.kind = ? AND NOT EXISTS"
            " (SELECT 1 FROM processed p WHERE p.stage = ? AND p.node = n.id)"
            " ORDER BY n.session, n.seq, n.id",
            (space, kind, stage),
        )
        return [r[0] for r in rows]

    def processed_among(self, stage: str, node_ids: Sequence[int]) -> set[int]:
        """Which of the given nodes a stage has consumed."""
        found: set[int] = set()
        for part in chunked(list(node_ids)):
            marks = ",".join("?" * len(part))
            found.update(
                r[0]
                for r in self.conn.execute(
                    f"SELECT node FROM processed WHERE stage = ? AND node IN ({marks})",
                    (stage, *part),
                )
            )
        return found

    # -- locks ------------------------------------------------------------------

    def try_lock(self, name: str) -> dict[str, Any] | None:
        """Take a named lock; return None on success or the live holder's details.

        A lock whose holder died (same host, process gone) is taken over.
        """
        host = socket.gethostname()
        with self.transaction():  # type: ignore[attr-defined]
            row = self.conn.execute(
                "SELECT pid, host, acquired_at FROM locks WHERE name = ?", (name,)
            ).fetchone()
            if row is not None:
                pid, holder_host, since = row
                alive = holder_host != host or _pid_alive(pid)
                if alive and pid != os.getpid():
                    return {"pid": pid, "host": holder_host, "since": since}
            self.conn.execute(
                "INSERT OR REPLACE INTO locks (name, pid, host, acquired_at) VALUES (?, ?, ?, ?)",
                (name, os.getpid(), host, now_iso()),
            )
        return None

    def unlock(self, name: str) -> None:
        """Release a lock this process holds."""
        with self.transaction():  # type: ignore[attr-defined]
            self.conn.execute(
                "DELETE FROM locks WHERE name = ? AND pid = ? AND host = ?",
                (name, os.getpid(), socket.gethostname()),
            )
