"""What a consolidation run reports: per stage, and for the whole run (the stages and their
order are declared in `registry`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memcli.store.work import RUN_COUNTERS

# The counters a stage reports are the columns of its `runs` row.
COUNTERS = RUN_COUNTERS
FAILED_RUNS = 3  # runs whose reply for a unit stayed invalid before the unit is given up
#: What a stage's pending units are, by the node kind its work is counted in.
UNIT_NAMES = {"episode": "turn", "segment": "segment", "fact": "fact", None: "word"}


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
    unit: str = "unit"  # what `pending` counts (UNIT_NAMES)

    def progressed(self) -> bool:
        """Whether the stage did any work: a unit done, a node or edge written, or a unit
        given up for good (it leaves the pending work)."""
        given_up = self.extra.get("given_up_invalid", 0) + self.extra.get("too_long", 0)
        return bool(self.items or self.nodes or self.edges or given_up)

    def why_waiting(self) -> str:
        """Why this stage's pending units wait (for a stage with pending work)."""
        parts = []
        if self.failures:
            parts.append(
                f"{self.failures} model {'reply' if self.failures == 1 else 'replies'} stayed "
                f"invalid: asked again by the next run, given up after {FAILED_RUNS} runs"
            )
        if self.reason:
            parts.append(self.reason)
        return "; ".join(parts) or "left for the next run"

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

    def progressed(self) -> bool:
        """Whether any stage did any work (see StageReport.progressed)."""
        return any(s.progressed() for s in self.stages)

    def per_turn(self) -> dict[str, float] | None:
        """The run's model tokens (prompt + reply) and seconds per turn it consolidated
        (the turns it put into segments); None when it consolidated none."""
        turns = next((s.extra.get("turns", 0) for s in self.stages if s.name == "segment"), 0)
        if not turns:
            return None
        t = self.totals()
        tokens = t["prompt_tokens"] + t["completion_tokens"]
        return {"turns": turns, "tokens": round(tokens / turns, 1),
                "seconds": round(self.seconds / turns, 3)}  # fmt: skip

    def waiting(self) -> dict[str, dict[str, Any]]:
        """Per stage with pending work: how many units wait, of what, and why."""
        return {
            s.name: {"units": s.pending, "unit": s.unit, "why": s.why_waiting()}
            for s in self.stages
            if s.pending
        }

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: stages by name, totals, what waits, lock and timing."""
        out: dict[str, Any] = {
            "stages": {s.name: s.to_dict() for s in self.stages},
            "totals": self.totals(),
            "waiting": self.waiting(),
            "per_turn": self.per_turn(),
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
