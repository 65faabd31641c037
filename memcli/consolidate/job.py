"""The state of one consolidation run: what its caller gives it (`RunContext`) and what its
stages share (`Job`: settings, models, the space's episodes, and caches built on first use).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.consolidate.concept_index import ConceptIndex
from memcli.consolidate.entity_index import EntityIndex
from memcli.consolidate.names import CaseStats, Mention
from memcli.consolidate.phrases import Corpus, name_tokens
from memcli.llm.embedder import embed_all
from memcli.models import Node
from memcli.progress import NoProgress, Progress

if TYPE_CHECKING:
    from memcli.config import Config, ConsolidationConfig
    from memcli.llm import ChatModel, Embedder
    from memcli.store import Store


@dataclass(frozen=True)
class RunContext:
    """What a consolidation run is given by its caller: the store and space, the settings,
    the models, where to report progress, and how to record which embedder wrote vectors.

    Consolidation sits below the library API (memcli.ops) and never sees its Memory.
    """

    store: Store
    space: str
    config: Config
    chat: ChatModel | None
    #: The embedder (None when embeddings are off), loaded on first use: a dry run or a
    #: run with nothing to embed never loads a model.
    load_embedder: Callable[[], Embedder | None]
    #: Notes in the store which embedder its vectors come from, and their length. Called
    #: inside the transaction that stores vectors.
    record_embedder: Callable[[int | None], None]
    progress: Progress = field(default_factory=NoProgress)


class Job:
    """One consolidation run: its context, settings, unit limit and shared caches."""

    def __init__(
        self,
        ctx: RunContext,
        *,
        flush: bool = False,
        limit: int | None = None,
        selected: Iterable[str] = (),
    ) -> None:
        self.ctx = ctx
        self.store = ctx.store
        self.space = ctx.space
        self.cfg: ConsolidationConfig = ctx.config.consolidation
        self.prompts_dir = ctx.config.prompts_dir
        self.concurrency = ctx.config.llm.concurrency
        self.chat_model = ctx.chat
        self.flush = flush  # also close the newest session's buffer
        self.limit = limit  # units of work per stage
        self.selected: frozenset[str] = frozenset(selected)  # the stages this run was asked for
        self.progress = ctx.progress
        self.summary_attempted: set[int] = set()  # segments whose LLM summary ran this run
        self.unfit_prompts: set[str] = set()  # extraction prompts that did not fit this run
        self._vectors: dict[str, Any] = {}  # text -> embedding, made by `prefetch`
        self._episodes: list[Node] | None = None
        self._corpus: Corpus | None = None
        self._concepts: ConceptIndex | None = None
        self._session_of: dict[int, str | None] | None = None
        self._entities: EntityIndex | None = None
        self._case_stats: CaseStats | None = None
        self.mentions: dict[str, list[Mention]] = {}  # text -> the names the rules find in it

    def episodes(self) -> list[Node]:
        """Every episode of the space in conversation order (read once per run)."""
        if self._episodes is None:
            self._episodes = list(self.store.iter_nodes(self.space, "episode", order="time"))
        return self._episodes

    def session_of(self) -> dict[int, str | None]:
        """Episode id -> its session."""
        if self._session_of is None:
            self._session_of = {e.id: e.session for e in self.episodes()}
        return self._session_of

    def segment_members(self, segment_ids: Sequence[int]) -> dict[int, list[Node]]:
        """Each segment's turns (through PART_OF), in conversation order."""
        edges = self.store.edges_of(list(segment_ids), ["PART_OF"])
        nodes = self.store.nodes_by_ids(e.src for e in edges)
        members: dict[int, list[Node]] = {sid: [] for sid in segment_ids}
        for e in edges:
            if e.dst in members and e.src in nodes:
                members[e.dst].append(nodes[e.src])
        for turns in members.values():
            turns.sort(key=lambda n: (n.seq or 0, n.id))
        return members

    @property
    def names(self) -> frozenset[str]:
        """Words of the space's speaker names (never concepts or key phrases)."""
        return name_tokens({e.speaker for e in self.episodes()})

    @property
    def corpus(self) -> Corpus:
        """Phrase document frequencies over the space's episodes (built on first use)."""
        if self._corpus is None:
            eps = self.episodes()
            self._corpus = Corpus.build(((e.id, e.text) for e in eps), self.names)
        return self._corpus

    @property
    def concepts(self) -> ConceptIndex:
        """The space's concepts by canonical label and alias (read on first use)."""
        if self._concepts is None:
            self._concepts = ConceptIndex(self.store, self.space, self.names, self.corpus.generic)
        return self._concepts

    @property
    def entities(self) -> EntityIndex:
        """The space's entities by name and alias (read from the store on first use)."""
        if self._entities is None:
            self._entities = EntityIndex(self.store, self.space)
        return self._entities

    @property
    def case_stats(self) -> CaseStats:
        """How the space capitalises each word (read once per run)."""
        if self._case_stats is None:
            self._case_stats = CaseStats.of(e.text for e in self.episodes())
        return self._case_stats

    def prefetch(self, texts: Iterable[str]) -> None:
        """Embed texts ahead of the units that store them, in few large calls.

        Embedding is deterministic, so a vector made now is the one the unit would make;
        small calls cost far more per text than large ones.
        """
        embedder = self.ctx.load_embedder()
        if embedder is None:
            return
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        self._vectors.update(zip(missing, embed_all(embedder, missing), strict=True))

    def embed(self, texts: Sequence[str]) -> list[Any] | None:
        """Vectors for texts (None when embeddings are off). Call outside transactions."""
        if self.ctx.load_embedder() is None:
            return None
        self.prefetch(texts)
        return [self._vectors[t] for t in texts]

    def save_vectors(self, rows: Iterable[tuple[int, str, Any]]) -> None:
        """Store (node id, kind, vector) rows. Call inside the unit's transaction."""
        placed = [(nid, self.space, kind, vec) for nid, kind, vec in rows if vec is not None]
        if not placed:
            return
        dim = len(placed[0][3])
        self.store.ensure_vectors(dim)
        self.ctx.record_embedder(dim)
        self.store.put_vectors(placed)
