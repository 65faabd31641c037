"""Topic links (GAM): each new segment judged against its most similar older segments.

Candidates are the `link_top_k` nearest older segments by vector (by full text when the
store has no vectors) whose vectors are at least `link_min_similarity` alike (cosine; on
LoCoMo dev the nearest older segments lie between 0.3 and 0.8): the model judges
only segments close enough to be related, and a segment with none is not asked about at
all (`no_candidate`). One prompt per new segment asks for a relation label and a
confidence per candidate, the ids the reply may give restricted by its schema to those
shown; a RELATED edge new -> older is stored when the label is not
`unrelated` and the confidence reaches `link_threshold` (τ), with weight = confidence.
Candidates are always older segments, so a segment's prompt never depends on the order in
which a run handles segments. Unit of work: one segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcli.consolidate.lines import day_of
from memcli.consolidate.nearest import similar
from memcli.consolidate.schemas import TopicLinks, topic_links
from memcli.consolidate.stage import Stage, Unfit
from memcli.models import Edge, Node
from memcli.prompting import data_block


def describe(segment: Node) -> str:
    """A segment as prompts show it: id, date, summary and keywords."""
    words = segment.props.get("keywords") or []
    tail = f" (keywords: {', '.join(words)})" if words else ""
    return f"[{segment.node_id}] ({day_of(segment)}) {segment.text}{tail}"


def candidates(stage: Stage, segment: Node, vector: Any) -> list[int]:
    """Ids of the most similar older segments, at least `link_min_similarity` alike when
    the segment has a vector."""
    job = stage.job
    ids = similar(
        job, vector, segment.text, ["segment"], job.cfg.link_top_k,
        exclude=[segment.id], before=segment.id,
    )  # fmt: skip
    if vector is None:
        return ids
    import numpy as np

    found = job.store.get_vectors(ids)
    mine = np.asarray(vector, dtype=float)
    mine = mine / (float(np.linalg.norm(mine)) or 1.0)

    def alike(other: Any) -> float:
        theirs = np.asarray(other, dtype=float)
        return float(mine @ theirs) / (float(np.linalg.norm(theirs)) or 1.0)

    return [i for i in ids if i in found and alike(found[i]) >= job.cfg.link_min_similarity]


def _write(stage: Stage, segment: Node, reply: TopicLinks, allowed: dict[str, int]) -> None:
    job = stage.job
    edges = []
    for link in reply.links:
        target = stage.known_ids([link.id], allowed)
        if not target or link.label == "unrelated":
            continue
        if link.confidence >= job.cfg.link_threshold:
            edges.append(
                Edge(segment.id, target[0], "RELATED", link.confidence, {"label": link.label})
            )
    with job.store.transaction():
        stage.report.edges += job.store.add_edges(job.space, edges)
        job.store.mark_processed(job.space, "link", [segment.id])
    stage.report.items += 1


def _batch(stage: Stage, segments: Sequence[Node]) -> None:
    job = stage.job
    vectors = job.store.get_vectors([s.id for s in segments])
    plans = []
    for seg in segments:
        ids = candidates(stage, seg, vectors.get(seg.id))
        others = job.store.nodes_by_ids(ids)
        shown = [others[i] for i in ids if i in others]
        plans.append((seg, shown))
    asks = [
        (
            stage.prompt(
                "relate",
                segment=data_block(describe(seg)),
                candidates=data_block("\n".join(describe(o) for o in shown)),
            ),
            topic_links(tuple(o.node_id for o in shown)),
        )
        for seg, shown in plans
        if shown
    ]
    replies = iter(stage.ask_many(asks))
    for seg, shown in plans:
        if not shown:  # nothing older, or nothing close enough: nothing to ask about
            with job.store.transaction():
                job.store.mark_processed(job.space, "link", [seg.id])
            stage.report.items += 1
            stage.count("no_candidate", 1)
            continue
        reply = next(replies)
        if isinstance(reply, Unfit):  # too long for this model: no links, for good
            stage.give_up("link", [seg.id])
        elif reply is None:  # counted; pending for a later run, or given up after a few
            stage.failed("link", [seg.id])
        else:
            _write(stage, seg, reply, {o.node_id: o.id for o in shown})
        job.progress.advance()


def run(stage: Stage) -> None:
    """Link every segment not linked yet."""
    job = stage.job
    todo = job.store.unprocessed(job.space, "link", kind="segment")
    segments = job.store.nodes_by_ids(todo)
    step = max(1, job.concurrency) * 2
    job.progress.start("linking topics", len(todo))
    for start in range(0, len(todo), step):
        room = len(todo) if job.limit is None else job.limit - stage.units_spent()
        batch = [segments[i] for i in todo[start : start + step] if i in segments][: max(0, room)]
        if not batch:
            stage.report.reason = "stopped by --limit"
            break
        _batch(stage, batch)
    job.progress.finish()
    stage.report.pending = len(job.store.unprocessed(job.space, "link", kind="segment"))
