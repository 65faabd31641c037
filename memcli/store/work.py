"""Consolidation's bookkeeping as both backends keep it: the counters of a run, a cached
model reply, and the name of the lock a consolidation holds."""

from __future__ import annotations

from dataclasses import dataclass

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

# Held by a consolidation run, and by prune (which must not remove episodes under it).
CONSOLIDATION_LOCK = "consolidate"


@dataclass
class CachedReply:
    response: str
    prompt_tokens: int
    completion_tokens: int
