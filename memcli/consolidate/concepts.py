"""The `concepts` stage: keyword concepts without an LLM, and merging twins.

Labels are canonical (see `concept_index`). The stage
- gives each new segment its best specific key phrases as concepts (document frequency
  between 2 and `concept_max_df_share` of the turns, so none becomes a hub) and links every
  consolidated turn that mentions a concept (HAS_CONCEPT), with or without an LLM: the
  concepts the fact extractor gives (memcli.consolidate.facts links them to turns and their
  segments) are added to these, so a model that names no concept, or whose replies fail,
  leaves a memory no poorer than without a model;
- merges new concepts into near-duplicates (same words reordered, a one-letter
  misspelling of a long word, or embedding cosine >= `concept_merge_threshold`), rewiring
  their edges onto the concept kept and remembering the merged label as an alias.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memcli.consolidate.fold import fold_node
from memcli.consolidate.normalize import near_duplicate
from memcli.consolidate.phrases import key_phrases, phrases
from memcli.models import Edge, Node

if TYPE_CHECKING:
    from memcli.consolidate.job import Job
    from memcli.consolidate.stage import Stage
    from memcli.store import Store

MIN_DF_CAP = 10.0
MIN_SESSIONS = 2  # a keyword concept must connect at least two sessions
EXTRA_CANDIDATES = 3  # key phrases looked at beyond concepts_per_segment


def concept_ids(stage: Stage, labels: Sequence[str], source: str) -> dict[str, int]:
    """Ids for canonical labels, creating the missing concepts (call inside a transaction,
    after `prepare_labels` embedded the new ones)."""
    job = stage.job
    index = job.concepts
    out: dict[str, int] = {}
    for label in labels:
        found = index.lookup(label)
        if found is None:
            vectors = job.embed([label])
            found = index.create(job.store, job.space, label, source)
            job.save_vectors([(found, "concept", vectors[0] if vectors else None)])
            stage.report.nodes += 1
        out[label] = found
    return out


def prepare_labels(job: Job, labels: Sequence[str]) -> None:
    """Embed the labels that have no concept yet (before the unit's transaction)."""
    job.prefetch(sorted({lb for lb in labels if job.concepts.lookup(lb) is None}))


def _df_cap(job: Job) -> float:
    """The most turns a keyword concept may occur in: a share of the space's turns (but
    never fewer than MIN_DF_CAP, or a small space could have no concepts at all)."""
    return max(MIN_DF_CAP, job.cfg.concept_max_df_share * job.corpus.docs)


def _chosen(stage: Stage, members: Sequence[Node]) -> list[str]:
    """The segment's key phrases that make good concepts, as canonical labels.

    Besides the frequency limits, a phrase must be said in at least MIN_SESSIONS sessions:
    a concept confined to one conversation only repeats what its segment already ties
    together; concepts are there to connect across sessions.
    """
    job = stage.job
    found = key_phrases(
        [e.text for e in members],
        job.corpus,
        job.cfg.concepts_per_segment + EXTRA_CANDIDATES,
        min_df=2,
        max_df=_df_cap(job),
        min_turns=2,
    )
    session_of = job.session_of()
    labels = []
    for phrase, _ in found:
        sessions = {session_of.get(i) for i in job.corpus.postings.get(phrase, [])}
        label = job.concepts.label(" ".join(phrase))
        if label and len(sessions) >= MIN_SESSIONS and label not in labels:
            labels.append(label)
    return labels[: job.cfg.concepts_per_segment]


def _keyword_links(stage: Stage, members: Sequence[Node]) -> tuple[list[str], dict[str, set[int]]]:
    """(chosen labels, label -> member turns mentioning it) for one segment."""
    job = stage.job
    corpus = job.corpus
    cap = _df_cap(job)
    chosen = _chosen(stage, members)
    said = {e.id: set(phrases(e.text, corpus.names)) for e in members}
    links: dict[str, set[int]] = {}
    candidates = [*chosen, *(lb for lb in job.concepts.by_label if lb not in chosen)]
    for label in candidates:
        phrase = tuple(label.split("_"))
        if label not in chosen and corpus.df.get(phrase, 0) > cap:
            continue
        hits = {e.id for e in members if phrase in said[e.id]}
        if hits or label in chosen:
            links[label] = hits
    return chosen, links


def _backfill(job: Job, label: str, exclude: set[int]) -> list[int]:
    """Earlier consolidated turns mentioning a new concept's phrase, and their segments."""
    phrase = tuple(label.split("_"))
    ids = [i for i in job.corpus.postings.get(phrase, []) if i not in exclude]
    done = job.store.processed_among("segment", ids)
    ids = [i for i in ids if i in done]
    segs = {e.dst for e in job.store.edges_of(ids, ["PART_OF"]) if e.src in done}
    return sorted(ids) + sorted(segs)


def mentions(job: Job, label: str) -> list[int]:
    """The consolidated turns that say a new concept's phrase, and their segments (none for
    a phrase too common to be a concept): the links the keyword rule would have made had
    the concept existed when those segments were read, so the order of stages or runs that
    created it does not matter."""
    if job.corpus.df.get(tuple(label.split("_")), 0) > _df_cap(job):
        return []
    return _backfill(job, label, set())


def keyword_unit(stage: Stage, segment: Node, members: Sequence[Node]) -> None:
    """Keyword concepts for one segment, committed with its `processed` mark."""
    job = stage.job
    chosen, links = _keyword_links(stage, members)
    new = [lb for lb in chosen if job.concepts.lookup(lb) is None]
    backfill = {lb: _backfill(job, lb, {e.id for e in members}) for lb in new}
    prepare_labels(job, chosen)
    with job.store.transaction():
        ids = concept_ids(stage, list(links), "keyword")
        edges: list[Edge] = []
        for label, eps in links.items():
            cid = ids[label]
            edges.extend(Edge(e, cid, "HAS_CONCEPT") for e in sorted(eps))
            edges.append(Edge(segment.id, cid, "HAS_CONCEPT"))
            edges.extend(Edge(src, cid, "HAS_CONCEPT") for src in backfill.get(label, []))
        stage.report.edges += job.store.add_edges(job.space, edges)
        job.store.mark_processed(job.space, "concepts", [segment.id])
    stage.report.items += 1


def run(stage: Stage) -> None:
    """Concepts for new segments, then merge new concepts into their near-duplicates."""
    job = stage.job
    store = job.store
    todo = store.unprocessed(job.space, "concepts", kind="segment")
    members = job.segment_members(todo)
    segments = store.nodes_by_ids(todo)
    # The labels of every new segment embedded in one go.
    prepare_labels(job, [lb for sid in todo for lb in _chosen(stage, members[sid])])
    job.progress.start("linking concepts", len(todo))
    for sid in todo:
        if not stage.budget_left():
            stage.report.reason = "stopped by --limit"
            break
        keyword_unit(stage, segments[sid], members.get(sid, []))
        job.progress.advance()
    job.progress.finish()
    stage.count("merged", merge_twins(stage))
    stage.report.pending = len(store.unprocessed(job.space, "concepts", kind="segment"))


def _duplicates(
    stage: Stage, fresh: Sequence[Node], every: Sequence[Node]
) -> list[tuple[int, int]]:
    """(new concept, other concept) pairs that name the same topic, in a stable order."""
    import numpy as np

    job = stage.job
    vectors = job.store.get_vectors([n.id for n in every])
    with_vec = [n.id for n in every if n.id in vectors]
    position = {nid: i for i, nid in enumerate(with_vec)}
    sims = None
    if with_vec:
        matrix = np.stack([vectors[i] for i in with_vec])
        sims = matrix @ matrix.T
    fresh_ids = {n.id for n in fresh}
    pairs: list[tuple[int, int]] = []
    for node in fresh:
        for other in every:
            if other.id == node.id or (other.id in fresh_ids and other.id > node.id):
                continue  # each new-new pair once
            same = near_duplicate(node.text, other.text)
            if not same and sims is not None and node.id in position and other.id in position:
                cosine = float(sims[position[node.id], position[other.id]])
                same = cosine >= job.cfg.concept_merge_threshold
            if same:
                pairs.append((node.id, other.id))
    return pairs


def merge_twins(stage: Stage) -> int:
    """Merge new concepts into near-duplicates; return how many concepts were merged away."""
    job = stage.job
    store = job.store
    fresh_ids = set(store.unprocessed(job.space, "concepts", kind="concept"))
    if not fresh_ids:
        return 0
    every = list(store.iter_nodes(job.space, "concept"))
    fresh = [n for n in every if n.id in fresh_ids]
    gone: set[int] = set()
    merged = 0
    for a, b in _duplicates(stage, fresh, every):
        if a in gone or b in gone:
            continue
        keep, drop = _survivor(store, a, b)
        _merge(stage, keep, drop)
        gone.add(drop)
        merged += 1
    with store.transaction():
        store.mark_processed(job.space, "concepts", sorted(fresh_ids - gone))
    return merged


def _survivor(store: Store, a: int, b: int) -> tuple[int, int]:
    """(keep, drop): the better-connected concept survives, the older one on a tie."""
    degree = {n: len(store.edges_of([n])) for n in (a, b)}
    keep = max((a, b), key=lambda n: (degree[n], -n))
    return keep, b if keep == a else a


def _merge(stage: Stage, keep: int, drop: int) -> None:
    """Move the dropped concept's edges onto the kept one, then delete it (one transaction)."""
    job = stage.job
    dropped = job.store.get_node(drop)
    fold_node(stage, keep, drop, "concepts")
    if dropped is not None:
        for alias in (dropped.text, *dropped.props.get("aliases", [])):
            job.concepts.by_label[alias] = keep
