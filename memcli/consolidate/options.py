"""What one consolidation run is asked to do, checked once where it is made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memcli.consolidate.registry import STAGES
from memcli.errors import UsageError, did_you_mean


@dataclass(frozen=True)
class ConsolidateOptions:
    """One run's choices: `flush` also closes the newest session's buffer; `stages` are the
    stages to run, in pipeline order; `limit` caps the units of work of each stage; a
    `dry_run` writes nothing and calls no model; `no_llm` runs without the chat model."""

    flush: bool = False
    stages: tuple[str, ...] = STAGES
    limit: int | None = None
    dry_run: bool = False
    no_llm: bool = False

    @classmethod
    def of(
        cls,
        *,
        flush: bool = False,
        stages: Sequence[str] | None = None,
        limit: int | None = None,
        dry_run: bool = False,
        no_llm: bool = False,
    ) -> ConsolidateOptions:
        """Options from what a caller typed: stage names (repeated or comma-separated; none
        means every stage). Unknown names, and a `limit` below 1, are usage errors."""
        return cls(flush, selected_stages(stages, limit), limit, dry_run, no_llm)


def selected_stages(stages: Sequence[str] | None, limit: int | None = None) -> tuple[str, ...]:
    """The requested stages in pipeline order; unknown names, and a `limit` below 1, are
    usage errors."""
    names = set(STAGES)
    if stages:
        names = {s.strip() for item in stages for s in item.split(",") if s.strip()}
        unknown = sorted(names - set(STAGES))
        if unknown:
            raise UsageError(
                f"unknown stage {', '.join(map(repr, unknown))}{did_you_mean(unknown[0], STAGES)}",
                fix=f"--stage takes: {', '.join(STAGES)} (repeat it, or separate with commas)",
            )
    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1")
    return tuple(s for s in STAGES if s in names)
