"""Segment summaries and keywords: by the LLM when there is one, extractive otherwise.

The extractive summary keeps the segment's most central sentences: each sentence is
scored by the TF-IDF cosine to the segment's centroid plus, when turns have vectors, its
turn's cosine to the mean turn vector; redundant sentences are skipped; the chosen ones
are printed in conversation order with their speakers. Keywords are the segment's best
TF-IDF phrases within the space.

As a stage, `summarize` upgrades segments that only have an extractive summary (made
without an LLM, or after an LLM summary failed) once a chat model is configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memcli.consolidate.grounding import Prompted
from memcli.consolidate.lines import turn_line
from memcli.consolidate.phrases import Corpus, key_phrases, sparse_cosine, sparse_mean
from memcli.consolidate.quality import Sieve
from memcli.consolidate.schemas import SegmentSummary
from memcli.consolidate.stage import Stage, Unfit
from memcli.models import Node
from memcli.prompting import data_block
from memcli.text import one_line, sentences, word_count

if TYPE_CHECKING:
    import numpy as np

MIN_SENTENCE_WORDS = 4
REDUNDANT = 0.6  # TF-IDF cosine above which a sentence repeats one already chosen
MAX_KEYWORD_WORDS = 4


def _centrality(episodes: Sequence[Node], vectors: dict[int, Any]) -> dict[int, float]:
    import numpy as np

    if not episodes or any(e.id not in vectors for e in episodes):
        return {}
    matrix = np.stack([vectors[e.id] for e in episodes])
    centre = matrix.mean(axis=0)
    norm = float(np.linalg.norm(centre)) or 1.0
    return {e.id: float(vectors[e.id] @ centre) / norm for e in episodes}


def extractive_summary(
    episodes: Sequence[Node], vectors: dict[int, np.ndarray], corpus: Corpus, words: int
) -> str:
    """The segment's most central, non-redundant sentences, in order, with speakers."""
    central = _centrality(episodes, vectors)
    centroid = sparse_mean([corpus.vector(e.text) for e in episodes])
    units = []  # (score, position, episode, sentence, vector)
    for e_index, ep in enumerate(episodes):
        for s_index, sentence in enumerate(sentences(ep.text)):
            vec = corpus.vector(sentence)
            score = sparse_cosine(vec, centroid) + central.get(ep.id, 0.0)
            units.append((score, (e_index, s_index), ep, sentence, vec))
    long_enough = [u for u in units if word_count(u[3]) >= MIN_SENTENCE_WORDS]
    pool = long_enough or sorted(units, key=lambda u: -len(u[3]))[:1]
    chosen: list[Any] = []
    used = 0
    for unit in sorted(pool, key=lambda u: (-u[0], u[1])):
        if used >= words:
            break
        if any(sparse_cosine(unit[4], c[4]) > REDUNDANT for c in chosen):
            continue
        chosen.append(unit)
        used += word_count(unit[3])
    return _render(sorted(chosen, key=lambda u: u[1]))


def _render(units: Sequence[Any]) -> str:
    parts: list[str] = []
    last_episode = None
    for _, _, ep, sentence, _ in units:
        if ep.id == last_episode:
            parts[-1] += " " + sentence
        else:
            parts.append(f"{ep.speaker}: {sentence}" if ep.speaker else sentence)
        last_episode = ep.id
    return " ".join(parts)


def keywords(episodes: Sequence[Node], corpus: Corpus, limit: int) -> list[str]:
    """The segment's best phrases by TF-IDF within the space."""
    found = key_phrases([e.text for e in episodes], corpus, limit)
    return [" ".join(phrase) for phrase, _ in found]


def clean_keywords(raw: Sequence[str], limit: int, prompted: Prompted | None = None) -> list[str]:
    """Model keywords trimmed, de-duplicated (case-insensitively) and capped; a keyword
    with no content word ("...") is dropped, and with `prompted` one taken from the
    prompt's own examples or said nowhere in the turns."""
    out: list[str] = []
    for word in raw:
        text = one_line(str(word))
        if (
            text
            and Sieve().reason(text, []) is None
            and word_count(text) <= MAX_KEYWORD_WORDS
            and text.lower() not in map(str.lower, out)
            and (prompted is None or prompted.why_not_keyword(text) is None)
        ):
            out.append(text)
    return out[:limit]


def summary_request(stage: Stage, episodes: Sequence[Node]) -> list[dict[str, str]]:
    """The summarize prompt for a segment's turns."""
    turns = "\n".join(turn_line(e) for e in episodes)
    return stage.prompt("summarize", turns=data_block(turns))


def llm_summaries(
    stage: Stage, groups: Sequence[Sequence[Node]]
) -> list[tuple[str, list[str]] | str | None]:
    """(summary, keywords) per group of turns from the LLM; None where the reply failed
    (asked again on a later run, given up after FAILED_RUNS runs); a reason where the
    extractive summary stays for good: the segment is short (`short`, not asked), the
    turns do not fit the model's window
    (`too_long`), or the summary fails the quality rules (`dropped_empty`,
    `dropped_verbatim`: memcli.consolidate.quality) or copies the prompt's own words
    (`dropped_example`: memcli.consolidate.grounding). Keywords the turns do not say, or
    taken from the prompt's examples, are left out (`keywords_ungrounded`,
    `keywords_example`)."""
    cfg = stage.job.cfg
    limit = cfg.keywords
    # A short segment keeps its extractive summary, not asked (`short`): that summary
    # holds much of it already, and a small model's summary of a few turns was mostly
    # dropped as ungrounded or verbatim anyway.
    short = [sum(word_count(e.text) for e in g) < cfg.summary_llm_min_words for g in groups]
    requests = [summary_request(stage, g) for g in groups]
    asked = iter(
        stage.ask_many([(r, SegmentSummary) for r, s in zip(requests, short, strict=True) if not s])
    )
    out: list[tuple[str, list[str]] | str | None] = []
    for group, request, is_short in zip(groups, requests, short, strict=True):
        if is_short:
            out.append(_final(stage, "short"))
            continue
        reply = next(asked)
        if reply is None:
            out.append(None)
            continue
        if isinstance(reply, Unfit):
            out.append(_final(stage, "too_long"))
            continue
        prompted = Prompted(request, [turn_line(e, date_hints=True) for e in group])
        reason = _weak_summary(one_line(reply.summary), group, prompted)
        if reason:
            out.append(_final(stage, reason))
            continue
        for keyword in reply.keywords:
            why = prompted.why_not_keyword(one_line(str(keyword)))
            if why:
                stage.count(why, 1)
        out.append((one_line(reply.summary), clean_keywords(reply.keywords, limit, prompted)))
    return out


def _final(stage: Stage, reason: str) -> str:
    stage.count(reason, 1)
    return reason


def _weak_summary(summary: str, group: Sequence[Node], prompted: Prompted) -> str | None:
    """Why a model summary is not kept (memcli.consolidate.quality), or None."""
    if prompted.copies(summary):  # the instructions or their examples, not the turns
        return "dropped_example"
    return Sieve().reason(summary, [turn_line(e, date_hints=True) for e in group])


def run(stage: Stage) -> None:
    """Give segments that only have an extractive summary an LLM one."""
    job = stage.job
    store = job.store
    if stage.chat is None:
        stage.report.reason = "extractive summaries (no LLM)"
        return
    todo = [
        i
        for i in store.unprocessed(job.space, "summarize", kind="segment")
        if i not in job.summary_attempted
    ]
    segments = store.nodes_by_ids(todo)
    batch_size = max(1, job.concurrency) * 2
    job.progress.start("summarizing segments", len(todo))
    for start in range(0, len(todo), batch_size):
        batch = [segments[i] for i in todo[start : start + batch_size] if i in segments]
        if job.limit is not None:  # the segment stage counts its summaries here too
            batch = batch[: max(0, job.limit - stage.units_spent())]
        if not batch:
            break
        _upgrade(stage, batch)
    stage.report.pending = len(store.unprocessed(job.space, "summarize", kind="segment"))
    job.progress.finish()


def _upgrade(stage: Stage, segments: Sequence[Node]) -> None:
    job, store = stage.job, stage.job.store
    members = {
        s.id: [e.src for e in store.edges_of([s.id], ["PART_OF"]) if e.dst == s.id]
        for s in segments
    }
    nodes = store.nodes_by_ids(i for ids in members.values() for i in ids)
    groups = [
        sorted((nodes[i] for i in members[s.id] if i in nodes), key=lambda e: (e.seq or 0, e.id))
        for s in segments
    ]
    results = llm_summaries(stage, groups)
    job.summary_attempted.update(s.id for s in segments)
    final = [s.id for s, r in zip(segments, results, strict=True) if isinstance(r, str)]
    if final:  # the extractive summary stays, for good (see llm_summaries)
        with store.transaction():
            store.mark_processed(job.space, "summarize", final)
    failed = [s.id for s, r in zip(segments, results, strict=True) if r is None]
    if failed:  # counted; pending for a later run, or given up after a few
        stage.failed("summarize", failed)
    done = [(s, r) for s, r in zip(segments, results, strict=True) if isinstance(r, tuple)]
    vectors = job.embed([r[0] for _, r in done]) or [None] * len(done)
    for (segment, (summary, words)), vec in zip(done, vectors, strict=True):
        with store.transaction():
            props = {**segment.props, "keywords": words, "summary": "llm"}
            store.update_node(segment.id, text=summary, props=props)
            job.save_vectors([(segment.id, "segment", vec)])
            store.mark_processed(job.space, "summarize", [segment.id])
        stage.report.items += 1
        job.progress.advance()
