"""Topic segmentation of closed buffers into segment nodes with PART_OF edges.

Boundaries come from a TextTiling-like similarity rule and, when there is an LLM, also
from it (prompts/boundaries.md): the model may add boundaries between the rule's, never take
one away, so a weak model's coarser reading cannot merge topics the rule tells apart. The
rule: the cosine between the
mean vectors of the `w` turns before and after every gap, a depth score for each dip
(how far the similarity falls below the nearest peaks on both sides), and boundaries at
the deepest dips of at least `boundary_min_depth`, keeping segments `segment_min_turns`
long. Turns without vectors (embedding provider `none`) are compared by TF-IDF instead.

Unit of work: one window of a buffer (up to `buffer_tokens`): its segments, summaries,
keywords, PART_OF edges, vectors and `processed` marks commit in one transaction.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from memcli.consolidate import summarize
from memcli.consolidate.buffer import Buffer, pending_buffers, take_window
from memcli.consolidate.lines import turn_line
from memcli.consolidate.phrases import sparse_cosine, sparse_mean
from memcli.consolidate.schemas import Boundaries
from memcli.consolidate.stage import Stage, Unfit
from memcli.models import Edge, Node
from memcli.prompting import data_block

WINDOWS_PER_BATCH = 16  # windows planned (and their summaries embedded) together
LINE_SHARE = 0.8  # of a prompt's room, what the turns' own words may take in a window


def gap_similarities(
    n: int, window: int, block_sim: Callable[[range, range], float]
) -> list[float]:
    """Similarity across each gap i (between turn i-1 and turn i), for i in 1..n-1."""
    return [
        block_sim(range(max(0, i - window), i), range(i, min(n, i + window))) for i in range(1, n)
    ]


def depth_scores(sims: Sequence[float]) -> list[float]:
    """TextTiling depth: rise to the highest point climbing left plus climbing right."""
    depths = []
    for i, s in enumerate(sims):
        left = s
        for j in range(i - 1, -1, -1):
            if sims[j] < left:
                break
            left = sims[j]
        right = s
        for j in range(i + 1, len(sims)):
            if sims[j] < right:
                break
            right = sims[j]
        depths.append((left - s) + (right - s))
    return depths


def choose_boundaries(depths: Sequence[float], min_depth: float, min_turns: int) -> list[int]:
    """Turn indices that start a new segment: deepest dips first, segments kept long enough.

    A dip counts when it is at least `min_depth` deep and, as in TextTiling, deeper than the
    window's mean depth plus half a standard deviation (so the cut-off follows the scale of
    whichever similarity measure produced the scores).
    """
    n = len(depths) + 1
    cutoff = min_depth
    if len(depths) >= 4:
        mean = sum(depths) / len(depths)
        std = (sum((d - mean) ** 2 for d in depths) / len(depths)) ** 0.5
        cutoff = max(cutoff, mean + 0.5 * std)
    chosen: list[int] = []
    for gap in sorted(range(len(depths)), key=lambda g: (-depths[g], g)):
        if depths[gap] < cutoff:
            break
        start = gap + 1
        if start < min_turns or n - start < min_turns:
            continue
        if all(abs(start - c) >= min_turns for c in chosen):
            chosen.append(start)
    return sorted(chosen)


def enforce_min_turns(starts: Sequence[int], n: int, min_turns: int) -> list[int]:
    """Boundaries in order, dropping any that would leave a segment too short."""
    kept: list[int] = []
    for start in sorted(set(starts)):
        previous = kept[-1] if kept else 0
        if start - previous >= min_turns and n - start >= min_turns:
            kept.append(start)
    return kept


def similarity_boundaries(stage: Stage, window: Sequence[Node]) -> list[int]:
    """The no-LLM rule over turn vectors (TF-IDF vectors when turns have none)."""
    cfg = stage.job.cfg
    vectors = stage.job.store.get_vectors([e.id for e in window])
    if len(vectors) == len(window) and window:
        import numpy as np

        matrix = np.stack([vectors[e.id] for e in window])

        def block_sim(left: range, right: range) -> float:
            a, b = matrix[list(left)].mean(axis=0), matrix[list(right)].mean(axis=0)
            denom = float(np.linalg.norm(a) * np.linalg.norm(b)) or 1.0
            return float(a @ b) / denom
    else:
        corpus = stage.job.corpus
        sparse = [corpus.vector(e.text) for e in window]

        def block_sim(left: range, right: range) -> float:
            return sparse_cosine(
                sparse_mean([sparse[i] for i in left]), sparse_mean([sparse[i] for i in right])
            )

    sims = gap_similarities(len(window), cfg.boundary_window, block_sim)
    return choose_boundaries(depth_scores(sims), cfg.boundary_min_depth, cfg.segment_min_turns)


def llm_boundaries(stage: Stage, window: Sequence[Node]) -> list[int] | None:
    """Boundaries from the LLM as 0-based segment starts; None when its reply failed or
    the window did not fit the model (the similarity rule decides then)."""
    numbered = "\n".join(f"{i}. {turn_line(e)}" for i, e in enumerate(window, start=1))
    try:
        reply = stage.ask(stage.prompt("boundaries", turns=data_block(numbered)), Boundaries)
    except Unfit:
        stage.count("too_long", 1)
        return None
    if reply is None:
        return None
    starts = []
    for number in reply.boundaries:
        if 2 <= number <= len(window):
            starts.append(number - 1)
        else:
            stage.report.dropped += 1  # a turn number that was not in the prompt
    return enforce_min_turns(starts, len(window), stage.job.cfg.segment_min_turns)


def merged_starts(rule: Sequence[int], model: Sequence[int], min_turns: int) -> list[int]:
    """The rule's boundaries, and the model's that are at least `min_turns` from every
    boundary kept: a model can cut a topic finer than the rule, never coarser."""
    kept = sorted(set(rule))
    for start in sorted(set(model)):
        if all(abs(start - other) >= min_turns for other in kept):
            kept.append(start)
            kept.sort()
    return kept


def split(stage: Stage, window: Sequence[Node]) -> list[list[Node]]:
    """The window cut into topic segments: the similarity rule's boundaries, and the
    model's where it finds more (a weak model that sees none leaves the rule's)."""
    if len(window) <= 1:
        return [list(window)]
    starts = similarity_boundaries(stage, window)
    if stage.chat is not None:
        model = llm_boundaries(stage, window)
        if model is not None:
            starts = merged_starts(starts, model, stage.job.cfg.segment_min_turns)
    cuts = [0, *starts, len(window)]
    return [list(window[a:b]) for a, b in itertools.pairwise(cuts) if b > a]


# How a new segment's summary was made: by the LLM; extractive for good (the LLM's was
# dropped or cannot fit); extractive after an LLM reply that never validated (asked again
# on a later run); extractive with no LLM asked.
LLM, KEPT, FAILED, EXTRACTIVE = "llm", "kept", "failed", "extractive"


def _summaries(
    stage: Stage, segments: Sequence[Sequence[Node]]
) -> list[tuple[str, list[str], str]]:
    """(text, keywords, how it was made) per segment: the LLM's when allowed and kept, else
    extractive."""
    job = stage.job
    summarizer = stage.peer("summarize")
    asked = summarizer.chat is not None and "summarize" in job.selected
    llm: list[Any] = (
        summarize.llm_summaries(summarizer, segments) if asked else [None] * len(segments)
    )
    vectors = job.store.get_vectors([e.id for seg in segments for e in seg])
    out = []
    for seg, made in zip(segments, llm, strict=True):
        if isinstance(made, tuple):
            out.append((made[0], made[1], LLM))
            continue
        # None: the reply never validated; a reason (a str): the extractive one stays
        how = EXTRACTIVE if not asked else FAILED if made is None else KEPT
        text = summarize.extractive_summary(seg, vectors, job.corpus, job.cfg.summary_words)
        out.append((text, summarize.keywords(seg, job.corpus, job.cfg.keywords), how))
    if "summarize" in job.selected:
        summarizer.report.items += len(segments)
    return out


def write_window(
    stage: Stage, segments: Sequence[Sequence[Node]], made: Sequence[tuple[str, list[str], str]]
) -> None:
    """Store one window's segments, PART_OF edges, vectors and marks in one transaction."""
    job, store, space = stage.job, stage.job.store, stage.job.space
    vectors = job.embed([text for text, _, _ in made]) or [None] * len(made)
    failed: list[int] = []  # new segments whose LLM summary never validated
    with store.transaction():
        for seg, (text, words, how), vec in zip(segments, made, vectors, strict=True):
            first, last = seg[0], seg[-1]
            props = {
                "keywords": words,
                "episodes": len(seg),
                "start": first.timestamp,
                "end": last.timestamp,
                "summary": "llm" if how == LLM else "extractive",
            }
            seg_id = store.insert_node(
                space, "segment", text, session=first.session, seq=first.seq,
                timestamp=first.timestamp, key=f"{first.id}-{last.id}", props=props,
            )  # fmt: skip
            stage.report.edges += store.add_edges(
                space, [Edge(e.id, seg_id, "PART_OF") for e in seg]
            )
            job.save_vectors([(seg_id, "segment", vec)])
            store.mark_processed(space, "segment", [e.id for e in seg])
            if how in (LLM, KEPT):  # nothing left for the summarize stage to do
                store.mark_processed(space, "summarize", [seg_id])
            if how != EXTRACTIVE:  # the LLM was asked: not again in this run
                job.summary_attempted.add(seg_id)
            if how == FAILED:
                failed.append(seg_id)
            stage.report.nodes += 1
    if failed:
        stage.peer("summarize").failed("summarize", failed)
    stage.report.items += 1
    job.progress.advance(sum(len(s) for s in segments))


def window_tokens(stage: Stage) -> int:
    """Tokens of turns per window: `buffer_tokens`, or less when the boundary prompt must
    fit a small model window (each turn's line adds its number, id and date)."""
    budget = stage.job.cfg.buffer_tokens
    if stage.chat is None or "segment" not in stage.job.selected:
        return budget
    room = stage.data_room("boundaries", turns=data_block(""))
    return budget if room is None else max(1, min(budget, int(room * LINE_SHARE)))


def windows(stage: Stage, buffers: Sequence[Buffer]) -> Iterator[list[list[Node]]]:
    """The segments of each window that is due, buffer by buffer, within `--limit`."""
    planned = 0
    budget = window_tokens(stage)
    for buffer in buffers:
        pending = list(buffer.episodes)
        while pending:
            if stage.job.limit is not None and planned >= stage.job.limit:
                stage.report.reason = "stopped by --limit"
                return
            window = take_window(pending, budget)
            is_last = len(window) == len(pending)
            if is_last and not buffer.closed:
                break  # the open tail waits for more turns, a new session or --flush
            segments = split(stage, window)
            if not is_last and len(segments) > 1:
                segments = segments[:-1]  # the cut-off topic continues in the next window
            planned += 1
            yield segments
            pending = pending[sum(len(s) for s in segments) :]


def run(stage: Stage) -> None:
    """Close the buffers that are due and turn them into segments."""
    job = stage.job
    pending_ids = set(job.store.unprocessed(job.space, "segment"))
    buffers = pending_buffers(job.episodes(), pending_ids, job.flush)
    job.progress.start("segmenting turns", len(pending_ids))
    planned = windows(stage, buffers)
    while group := list(itertools.islice(planned, WINDOWS_PER_BATCH)):
        made = [_summaries(stage, segments) for segments in group]
        # One embedding call for the whole group: small calls cost far more per text.
        job.prefetch([text for summaries in made for text, _, _ in summaries])
        for segments, summaries in zip(group, made, strict=True):
            write_window(stage, segments, summaries)
    job.progress.finish()
    left = set(job.store.unprocessed(job.space, "segment"))
    stage.report.pending = len(left)
    stage.count("turns", len(pending_ids - left))  # what the run's cost per turn is over
    if left and not stage.report.reason:
        stage.report.reason = f"{len(left)} turns wait in open buffers (--flush closes them)"
