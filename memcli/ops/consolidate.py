"""`memcli consolidate`: distil unconsolidated turns into the memory graph.

The ten stages, in order (one module each in memcli.consolidate): segment (episodic
buffers -> topic segments with PART_OF edges), summarize (segment summaries and keywords;
extractive without an LLM, upgraded once one is configured), link (RELATED edges between
similar segments), gate (which turns carry anything worth extracting), facts (facts and
their concepts per chunk of turns), concepts (keyword concepts without an LLM; plural,
spelling and near-duplicate twins merged), entities (named things with MENTIONS edges, and
with an LLM their descriptions and RELATION triplets), supersede (newer facts mark the
facts they replace), reflect (reflections over new facts), words (vectors for the new words
of turns). Without an LLM, link, gate, facts, supersede and reflect are skipped and say so.

`options.limit` caps the units of work of each stage in this run (a segment window, a
segment, a facts chunk, a reflection batch); what is left stays pending for the next run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcli.consolidate.job import RunContext
from memcli.consolidate.reports import ConsolidateReport
from memcli.progress import NoProgress, Progress

if TYPE_CHECKING:
    from memcli.consolidate.options import ConsolidateOptions
    from memcli.ops.base import MemoryBase


def consolidate(
    mem: MemoryBase, options: ConsolidateOptions, progress: Progress | None = None
) -> ConsolidateReport:
    """Run the consolidation stages on the memory's space; returns what each stage did.

    When another process is consolidating the same store, returns at once with
    `locked=True` and writes nothing.
    """
    from memcli.consolidate.runner import consolidate as run

    chat = None if options.no_llm else mem.chat
    mem.check_embedder()
    ctx = RunContext(
        store=mem.store,
        space=mem.space,
        config=mem.cfg,
        chat=chat,
        load_embedder=mem.load_embedder,
        record_embedder=mem.record_embedder,
        progress=progress or NoProgress(),
    )
    return run(ctx, options)


def release_lock(mem: MemoryBase) -> dict[str, Any] | None:
    """Remove the store's consolidation lock (left by a run on another host or container);
    the holder it named, or None when none was held. DatabaseError while its process runs
    on this host."""
    from memcli.store import CONSOLIDATION_LOCK

    return mem.store.force_unlock(CONSOLIDATION_LOCK)
