"""The `gate` stage: the selective memory gate in front of LLM extraction (MemORAI).

A cheap rule decides, per turn of each new topic segment, whether it carries anything worth
extracting. A turn does when it names something other than a participant (`names`), holds
a number, amount or date, or says at least `gate_min_words` informative words: words the
space does not use in more than `gate_common_share` of its turns (greetings, thanks and
filler are made of the words every conversation repeats). Turns that do not are marked
done for the `facts` stage, and no extraction prompt (prompts/extract.md, asked by `facts`
and read again by `entities`) carries them; a segment none of whose turns does is skipped,
and `entities` asks the LLM nothing about it (its rule pass still runs). Skipped turns stay
searchable as episodes.

Each decision is kept on the segment (`gate`: keep | skip); the run records segments kept
and skipped, turns skipped, and an estimate of the prompt tokens saved: the tokens of the
skipped turns as the extraction prompt would have carried them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memcli.consolidate.lines import turn_line
from memcli.consolidate.names import mentions
from memcli.models import Node
from memcli.text import STOPWORDS, canonical_key, count_tokens, words

if TYPE_CHECKING:
    from memcli.consolidate.job import Job
    from memcli.consolidate.stage import Stage

MIN_COMMON_DF = 3  # in a small space, a word must be in this many turns to be common
_NUMBER = re.compile(r"\d")


def common_words(job: Job) -> frozenset[str]:
    """Words in more than `gate_common_share` of the space's turns (at least MIN_COMMON_DF),
    and the names of the people talking (addressing someone says nothing about them)."""
    df: Counter[str] = Counter()
    eps = job.episodes()
    for ep in eps:
        df.update(set(words(ep.text)))
    cap = max(MIN_COMMON_DF, job.cfg.gate_common_share * len(eps))
    speakers = {canonical_key(ep.speaker) for ep in eps if ep.speaker}
    return frozenset({*(w for w, n in df.items() if n > cap), *speakers})


def memorable(job: Job, turn: Node, common: frozenset[str]) -> bool:
    """Whether a turn names something (other than who is talking), holds a number or date,
    or says enough informative words."""
    if _NUMBER.search(turn.text) or turn.props.get("time_refs"):
        return True
    if any(canonical_key(m.surface) not in common for m in mentions(turn.text, job.case_stats)):
        return True
    informative = {w for w in words(turn.text) if len(w) > 2 and w not in STOPWORDS}
    return len(informative - common) >= job.cfg.gate_min_words


def keeper(job: Job) -> Callable[[Node], bool]:
    """Whether the gate keeps a turn for extraction (every turn when the gate is off)."""
    if not job.cfg.gate:
        return lambda turn: True
    common = common_words(job)
    return lambda turn: memorable(job, turn, common)


def decide(stage: Stage, segment: Node, turns: Sequence[Node], common: frozenset[str]) -> None:
    """Record one segment's decision; its turns with nothing memorable are marked done for
    `facts` (the segment is skipped when none of its turns is memorable)."""
    job = stage.job
    dull = [t for t in turns if not memorable(job, t, common)]
    keep = len(dull) < len(turns)
    with job.store.transaction():
        decision = {**segment.props, "gate": "keep" if keep else "skip"}
        job.store.update_node(segment.id, props=decision)
        job.store.mark_processed(job.space, "facts", [t.id for t in dull])
        job.store.mark_processed(job.space, "gate", [segment.id])
    stage.report.items += 1
    stage.count("kept" if keep else "skipped", 1)
    stage.count("turns_skipped", len(dull))
    # One extraction prompt (prompts/extract.md) would have carried each dull turn.
    stage.count("tokens_saved", sum(count_tokens(turn_line(t, date_hints=True)) for t in dull))


def run(stage: Stage) -> None:
    """Gate every new segment (nothing when `gate` is off: every segment is kept)."""
    job = stage.job
    todo = job.store.unprocessed(job.space, "gate", kind="segment")
    if not job.cfg.gate:  # every segment goes on to extraction
        with job.store.transaction():
            job.store.mark_processed(job.space, "gate", todo)
        stage.report.reason = "gate off (consolidation.gate: false)"
        return
    segments = job.store.nodes_by_ids(todo)
    members = job.segment_members(todo)
    common = common_words(job) if todo else frozenset()
    for sid in todo:
        if not stage.budget_left():
            stage.report.reason = "stopped by --limit"
            break
        decide(stage, segments[sid], members.get(sid, []), common)
    stage.report.pending = len(job.store.unprocessed(job.space, "gate", kind="segment"))
