"""Plain data records shared by every layer. No I/O here."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Node kinds and the short prefix of their public ids (``ep12``, ``fa3`` ...).
KIND_PREFIX: dict[str, str] = {
    "episode": "ep",
    "segment": "sg",
    "fact": "fa",
    "reflection": "rf",
    "concept": "co",
    "entity": "en",
}
PREFIX_KIND: dict[str, str] = {v: k for k, v in KIND_PREFIX.items()}

EDGE_TYPES: tuple[str, ...] = (
    "NEXT",
    "PART_OF",
    "RELATED",
    "DERIVED_FROM",
    "DERIVED_FROM_FACT",
    "HAS_CONCEPT",
    "ABOUT_CONCEPT",
    "MENTIONS",
    "RELATION",
    "SUPERSEDES",
    "CONTRADICTS",
)


def node_public_id(kind: str, rowid: int) -> str:
    """The citable id of a node: kind prefix plus its row id."""
    return f"{KIND_PREFIX[kind]}{rowid}"


def parse_node_id(node_id: str) -> tuple[str, int] | None:
    """Split a public id into (kind, rowid); None when it is not of that shape."""
    prefix, digits = node_id[:2], node_id[2:]
    if prefix not in PREFIX_KIND or not digits.isdigit():
        return None
    return PREFIX_KIND[prefix], int(digits)


def typed_node_id(text: str) -> str:
    """A node id as a person may paste it from packed context (`[ep12]`, ` EP12 `), in its
    stored form (`ep12`)."""
    return text.strip().strip("[]").strip().lower()


def embedding_text(text: str, speaker: str | None) -> str:
    """What gets embedded for a node: a turn's speaker helps questions about a person."""
    return f"{speaker}: {text}" if speaker else text


# A turn is embedded with the opening words of the turn before it in its session: a reply
# often says what it is about only through the turn it answers ("Yes, every morning before
# work!"). Its own words come first, so the model's length limit cuts the context, never
# the turn; 30 words bound the cost, as for the full-text index's turn context. Measured
# leave one genre out on three dev genres: docs/retrieval.md, "Turn context".
TURN_CONTEXT_WORDS = 30
Turn = tuple[str, str | None]  # a turn's text and speaker


def turn_embedding_text(text: str, speaker: str | None, before: Turn | None) -> str:
    """What gets embedded for a turn: its own text (with its speaker), then the opening
    words of the turn before it in its session (`before`: its text and speaker)."""
    own = embedding_text(text, speaker)
    if before is None or not before[0].strip():
        return own
    opening = " ".join(before[0].split()[:TURN_CONTEXT_WORDS])
    return f"{own}\n{embedding_text(opening, before[1])}"


@dataclass
class Episode:
    """One conversation turn as a reader produced it, before it is stored."""

    text: str
    speaker: str | None = None
    session: str | None = None
    timestamp: str | None = None  # ISO 8601 when the original could be parsed
    timestamp_raw: str | None = None  # exactly what the input said
    ref: str | None = None  # the caller's own id for the turn (LoCoMo dia_id)
    props: dict[str, Any] = field(default_factory=dict)
    line: int | None = None  # where it came from, for error messages


@dataclass(frozen=True)
class BadRecord:
    """A record a reader could not turn into an Episode."""

    line: int
    reason: str


@dataclass
class Node:
    """A stored node of any kind."""

    id: int
    kind: str
    space: str
    text: str
    speaker: str | None = None
    session: str | None = None
    seq: int | None = None
    timestamp: str | None = None
    ref: str | None = None
    belief: float | None = None
    status: str | None = None
    props: dict[str, Any] = field(default_factory=dict)
    created_at: str | None = None

    @property
    def node_id(self) -> str:
        return node_public_id(self.kind, self.id)


@dataclass
class Edge:
    """A stored, typed, directed edge."""

    src: int
    dst: int
    type: str
    weight: float = 1.0
    props: dict[str, Any] = field(default_factory=dict)


@dataclass
class Hit:
    """One retrieved node with its score and the refs of the episodes behind it.

    `why` and `via` say why it ranked, when the strategy was asked to and can
    (memcli.retrieval.explain holds the contract): `why` the score's parts by signal,
    `via` the node ids of the graph path that brought a hit that was not a direct match."""

    node: Node
    score: float
    sources: list[str] = field(default_factory=list)
    why: dict[str, float] | None = None
    via: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        n = self.node
        out: dict[str, Any] = {
            "node_id": n.node_id,
            "kind": n.kind,
            "ref": n.ref,
            "session": n.session,
            "speaker": n.speaker,
            "timestamp": n.timestamp,
            "text": n.text,
            "score": round(self.score, 6),
            "sources": self.sources,
        }
        if self.why is not None:  # explained (ask --explain)
            out["why"] = {k: round(v, 6) for k, v in self.why.items()}
            out["via"] = self.via
        return out


@dataclass
class IngestReport:
    """What one `ingest` call did."""

    files: list[str] = field(default_factory=list)
    new: int = 0
    skipped: int = 0  # already stored
    forgotten: int = 0  # forgotten earlier (pruned), not stored again
    restored: int = 0  # forgotten earlier, stored again as asked (allow_forgotten)
    invalid: int = 0
    sessions: int = 0
    seconds: float = 0.0
    embed_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # `file:line: ...`: stored, but note it
    secrets_masked: int = 0  # credentials replaced by [secret …] marks (ingest.mask_secrets)

    def to_dict(self) -> dict[str, Any]:
        rounded = {"seconds": round(self.seconds, 3), "embed_seconds": round(self.embed_seconds, 3)}
        return {**asdict(self), **rounded}


@dataclass
class Statement:
    """One memory in a subject group of the packed context, dated."""

    node_id: str
    kind: str
    date: str | None  # ISO: a turn's time, a fact's valid_from
    speaker: str | None
    text: str  # as packed (a long message by its excerpt)
    note: str = ""  # what a turn's relative time expressions meant ("[yesterday = 7 May 2023]")
    latest: bool = False  # the latest of the group's statements that is not superseded
    status: str | None = None  # a fact's status ("superseded" keeps its validity dates)
    valid_to: str | None = None
    superseded_by: str | None = None


@dataclass
class SubjectGroup:
    """What the packed memories say about one subject (a named thing, or a speaker the
    question names), oldest first (memcli.context.about)."""

    subject: str
    statements: list[Statement] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Answer:
    """The result of one `ask`: packed context, ranked hits, and an answer when an LLM ran."""

    question: str
    context: str
    hits: list[Hit]
    answer: str | None = None
    citations: list[str] = field(default_factory=list)
    # The packed context's subject groups (memcli.context.about), as data.
    about: list[SubjectGroup] = field(default_factory=list)
    # What the answer cost: llm_calls, cache_hits, prompt_tokens, completion_tokens (tokens
    # as recorded, also for cached replies). For library callers; not part of --json.
    usage: dict[str, int] = field(default_factory=dict)
    # Node ids of the hits that made it into `context` (for library callers, `memcli ui`).
    packed: list[str] = field(default_factory=list)
    # Names the answer gives that none of its cited memories says (memcli.ops.answer_check):
    # a flag that the answer may be wrong.
    unsupported: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "question": self.question,
            "context": self.context,
            "hits": [h.to_dict() for h in self.hits],
            "about": [g.to_dict() for g in self.about],
        }
        if self.answer is not None:
            out["answer"] = self.answer
            out["citations"] = self.citations
            out["unsupported"] = self.unsupported
        return out


@dataclass
class PruneReport:
    """What one `prune` removed (or, in a dry run, would remove)."""

    dry_run: bool
    removed: dict[str, int] = field(default_factory=dict)  # node kind -> count
    edges: int = 0
    sources: list[str] = field(default_factory=list)  # paths of the source rows removed
    kept_shared: int = 0  # selected episodes kept because another source still holds them
    cache_entries: int = 0  # model replies dropped from the cache (they may quote the text)
    forgotten: int = 0  # turns that stay forgotten: ingesting them again skips them
    embedded_again: int = 0  # turns after a forgotten one, embedded beside the turn now before
    stale_vectors: int = 0  # such turns whose vector could not be made again (no embedder)
    examples: list[dict[str, str]] = field(default_factory=list)
    vacuumed: bool = False
    bytes_before: int = 0
    bytes_after: int = 0

    @property
    def total(self) -> int:
        """Nodes removed, all kinds together."""
        return sum(self.removed.values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AddReport:
    """What one `add` did: the episode that holds the text, and whether it is new."""

    node_id: str | None  # None: forgotten earlier, not stored again
    new: bool  # False: the same text, speaker, session and time was already stored
    session: str
    timestamp: str | None
    source: str
    forgotten: bool = False  # `prune` forgot this very memory before: not stored again

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
