"""What a consolidation run reports: per stage, and for the whole run (the stages and their
order are declared in `registry`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memcli.store.work import RUN_COUNTERS

# The counters a stage reports are the columns of its `runs` row.
COUNTERS = RUN_COUNTERS


@dataclass
class StageReport:
    """What one stage did in one run (or, in a dry run, what it would do)."""

    name: str
    status: str = "done"  # done | skipped | failed | interrupted
    reason: str | None = None
    items: int = 0  # units of work completed (segments, chunks, batches ...)
    nodes: int = 0
    edges: int = 0
    llm_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0  # model replies still invalid after re-asks, and failed units
    dropped: int = 0  # ids in model replies that were not in the prompt
    pending: int = 0  # units left for a later run
    seconds: float = 0.0
    extra: dict[str, int] = field(default_factory=dict)  # stage-specific counts

    def counters(self) -> dict[str, int]:
        """The counters mirrored in the `runs` table."""
        return {name: getattr(self, name) for name in COUNTERS}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "status": self.status,
            "reason": self.reason,
            **self.counters(),
            "dropped": self.dropped,
            "pending": self.pending,
            "seconds": round(self.seconds, 3),
            **self.extra,
        }


@dataclass
class ConsolidateReport:
    """The result of one `consolidate` call."""

    stages: list[StageReport] = field(default_factory=list)
    locked: bool = False
    holder: dict[str, Any] | None = None  # the live process holding the lock
    dry_run: bool = False
    no_llm: bool = False
    sessions: list[dict[str, Any]] = field(default_factory=list)  # dry run: open buffers
    seconds: float = 0.0

    def stage(self, name: str) -> StageReport:
        """The report of one stage (KeyError when it is not part of this run)."""
        return next(s for s in self.stages if s.name == name)

    def totals(self) -> dict[str, int]:
        """Every counter summed over the stages."""
        keys = (*COUNTERS, "dropped", "pending")
        return {k: sum(getattr(s, k) for s in self.stages) for k in keys}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: stages by name, totals, lock and timing."""
        out: dict[str, Any] = {
            "stages": {s.name: s.to_dict() for s in self.stages},
            "totals": self.totals(),
            "locked": self.locked,
            "dry_run": self.dry_run,
            "no_llm": self.no_llm,
            "seconds": round(self.seconds, 3),
        }
        if self.holder:
            out["holder"] = self.holder
        if self.dry_run:
            out["sessions"] = self.sessions
        return out
