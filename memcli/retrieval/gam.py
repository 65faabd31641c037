"""`gam` (GAM): top-down retrieval from topic anchors, reranked by multiplicative cues.

1. Anchors: the topic segments most similar to the question, plus their RELATED neighbours.
2. Drill-down: the turns PART_OF those segments (and the facts DERIVED_FROM those turns)
   become the candidates, next to the best direct matches among memories.
3. Rerank: (similarity + topic bonus) × β_time^time × β_role^role × β_conf^conf, where the
   similarity is max-normalised, the topic bonus is that of memcli.retrieval.topic (the
   memory's segment's similarity, scaled by `topic_weight`), and each cue is 0 or 1:
   - time: the question asks about time and the memory is dated or mentions a time;
   - role: a person the question names is the memory's speaker (or named in a derived one);
   - conf: a derived memory believed at least `gam_min_belief`.
A store without segments (only episodes) skips steps 1-2 and reranks the direct matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memcli.models import Hit, Node
from memcli.retrieval import MEMORY_KINDS, SearchContext, register_retriever
from memcli.retrieval.fusion import Similarity, fused_groups, inherit_replies, ranked, top
from memcli.retrieval.topic import TopicContext

# Questions that ask about time: when, what date/year, how long ago, before or after what.
_TEMPORAL_QUESTION = re.compile(
    r"\b(when|what (?:date|day|year|month|time|week)|which (?:date|day|year|month|week)|"
    r"how long|how many (?:days|weeks|months|years)|since when|until when|what age)\b",
    re.IGNORECASE,
)
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
# Absolute time in a memory's own words: a month name, a year, a weekday or a numeric date.
_TIME_IN_TEXT = re.compile(
    rf"\b({_MONTHS}|(?:19|20)\d\d|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"\d{1,2}/\d{1,2}(?:/\d{2,4})?)\b",
    re.IGNORECASE,
)
_NAME_WORD = re.compile(r"[A-Za-z][\w'-]*")


def is_temporal(question: str) -> bool:
    """Whether the question asks when something happened or how long it took."""
    return _TEMPORAL_QUESTION.search(question) is not None


def time_bearing(node: Node) -> bool:
    """Whether a memory carries its own time: resolved expressions, a date, a valid_from."""
    if node.props.get("time_refs") or node.props.get("valid_from"):
        return True
    return _TIME_IN_TEXT.search(node.text) is not None


def named_people(question: str, names: Iterable[str]) -> set[str]:
    """Known speakers or entities the question names, by full name or first name."""
    words = [w.lower() for w in _NAME_WORD.findall(question)]
    text = " " + " ".join(words) + " "
    found = set()
    for name in names:
        parts = [w.lower() for w in _NAME_WORD.findall(name)]
        if parts and (f" {' '.join(parts)} " in text or parts[0] in words):
            found.add(name.lower())
    return found


def role_match(node: Node, people: set[str]) -> bool:
    """Whether a memory belongs to a person the question names."""
    if not people:
        return False
    if node.speaker:
        return node.speaker.lower() in people
    words = " " + " ".join(w.lower() for w in _NAME_WORD.findall(node.text)) + " "
    return any(f" {person} " in words for person in people)


def anchors(ctx: SearchContext, sim: Similarity) -> list[int]:
    """The best-matching topic segments plus the segments RELATED to them."""
    topics = {i: s for i, s in sim.scores.items() if sim.kinds.get(i) == "segment"}
    best = [i for i, _ in top(topics, ctx.cfg.gam_anchors)]
    if not best:
        return []
    related = ctx.store.edge_rows(best, ["RELATED"])
    return list(dict.fromkeys([*best, *(n for e in related for n in e[:2])]))


def drill_down(ctx: SearchContext, segments: Sequence[int]) -> list[int]:
    """Turns PART_OF the segments, and facts DERIVED_FROM those turns."""
    if not segments:
        return []
    inside = set(segments)
    turns = [src for src, dst, _, _ in ctx.store.edge_rows(segments, ["PART_OF"]) if dst in inside]
    found = set(turns)
    facts = [src for src, dst, _, _ in ctx.store.edge_rows(turns, ["DERIVED_FROM"]) if dst in found]
    return list(dict.fromkeys([*turns, *facts]))


def rerank(
    ctx: SearchContext,
    query: str,
    sim: Similarity,
    nodes: dict[int, Node],
    topic: dict[int, float] | None = None,
) -> dict[int, float]:
    """(normalised similarity + topic bonus) × β per cue that fires, for every memory among
    `nodes`.

    People are the speakers of these memories and the entities the search met; the
    question names them or not.
    """
    cfg = ctx.cfg
    topic = topic or {}
    best = max((sim.scores.get(i, 0.0) for i, n in nodes.items() if n.kind in MEMORY_KINDS),
               default=0.0)  # fmt: skip
    scale = 1.0 / best if best > 0 else 1.0
    temporal = is_temporal(query)
    names = {n.speaker for n in nodes.values() if n.speaker}
    names.update(n.text for n in nodes.values() if n.kind == "entity")
    people = named_people(query, sorted(names))
    scores = {}
    for i, node in nodes.items():
        if node.kind not in MEMORY_KINDS:
            continue
        score = max(sim.scores.get(i, 0.0), 0.0) * scale + topic.get(i, 0.0)
        if temporal and time_bearing(node):
            score *= cfg.gam_beta_time
        if role_match(node, people):
            score *= cfg.gam_beta_role
        if node.kind != "episode" and (node.belief or 0.0) >= cfg.gam_min_belief:
            score *= cfg.gam_beta_conf
        scores[i] = score
    return scores


@register_retriever("gam")
def retrieve(ctx: SearchContext, query: str, k: int) -> list[Hit]:
    """Memories under the best topics, reranked by time, role and confidence cues."""
    cfg = ctx.cfg
    pools = [
        (MEMORY_KINDS, max(cfg.candidates, k)),
        (("segment",), cfg.gam_anchors),
        (("entity",), cfg.gam_anchors),
    ]
    sim = fused_groups(ctx, query, pools)
    inherit_replies(ctx, sim, cfg.seeds, cfg.reply_share)
    below = drill_down(ctx, anchors(ctx, sim))
    sim.extend(ctx, below)
    nodes = ctx.store.nodes_by_ids([*sim.scores, *below])
    memories = [i for i, node in nodes.items() if node.kind in MEMORY_KINDS]
    topic = TopicContext.within(sim, cfg.topic_weight).bonus(ctx, memories)
    return ctx.hits(ranked(rerank(ctx, query, sim, nodes, topic)), k)
