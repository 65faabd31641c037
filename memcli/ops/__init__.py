"""The library API the CLI calls: one Memory object per command, over one store and one space."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memcli.config import Config
from memcli.errors import EmbeddingMismatch, NotFound
from memcli.llm import ChatModel, Embedder, check_embedding, create_chat, create_embedder
from memcli.store import Store, open_store

_UNSET: Any = object()


class Memory:
    """A store plus the models and settings used to read and write it.

    Models are created on first use, so commands that never embed never load one.
    Pass `embedder=`/`chat=` to supply ready-made clients (tests, the benchmark runner).
    With `create=False` a missing database file is NotFound instead of a new empty store.
    """

    def __init__(
        self,
        cfg: Config,
        store: Store | None = None,
        *,
        embedder: Embedder | None = _UNSET,
        chat: ChatModel | None = _UNSET,
        create: bool = True,
    ) -> None:
        self.cfg = cfg
        self.space = cfg.space
        path = Path(cfg.db_path).expanduser()
        self.created = store is None and not path.exists()  # this Memory made the file
        if self.created and not create:
            raise NotFound(
                f"no memory store at {path}",
                fix="ingest something first (memcli ingest FILE), or check --db / MEMCLI_DB",
            )
        self.store = store if store is not None else open_store(path)
        self._embedder = embedder
        self._chat = chat

    def close(self, failed: bool = False) -> None:
        """Close the store; after a failed run, delete a file this Memory created if it
        is still empty, so a mistake leaves no stray database behind."""
        discard = failed and self.created and self._holds_nothing()
        self.store.close()
        if discard:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{self.store.path}{suffix}").unlink(missing_ok=True)

    def _holds_nothing(self) -> bool:
        try:
            return not self.store.spaces()
        except Exception:  # a broken store is left for the user to look at
            return False

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- models ------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder (None when embeddings are off), checked against the store."""
        self.check_embedder()
        return self.load_embedder()

    def load_embedder(self) -> Embedder | None:
        """The configured embedder without comparing it to the store (for `reindex`)."""
        if self._embedder is _UNSET:
            self._embedder = create_embedder(self.cfg.embedding)
        return self._embedder

    @property
    def chat(self) -> ChatModel | None:
        """The configured chat model, or None when `llm.provider` is `none`."""
        if self._chat is _UNSET:
            self._chat = create_chat(self.cfg.llm)
        return self._chat

    def embedder_identity(self) -> str:
        """`provider:model` of the embedder this Memory writes with (`none` when off)."""
        if self._embedder is _UNSET:
            emb = self.cfg.embedding
            return "none" if emb.provider == "none" else f"{emb.provider}:{emb.model}"
        if self._embedder is None:
            return "none"
        return f"{self._embedder.provider}:{self._embedder.model}"

    def stored_identity(self) -> str | None:
        """`provider:model` the store's vectors were made with, or None for a fresh store."""
        return self.store.get_meta("embedding.identity")

    def check_embedder(self) -> None:
        """Refuse a bad embedding config, and to mix vectors of two models in one store."""
        if self._embedder is _UNSET:
            check_embedding(self.cfg.embedding)
        stored = self.stored_identity()
        wanted = self.embedder_identity()
        if stored is not None and stored != wanted:
            raise EmbeddingMismatch(stored, wanted)

    def record_embedder(self, dim: int | None) -> None:
        """Note in `meta` which embedder the store now uses. Call inside a transaction."""
        if self.stored_identity() is None:
            self.store.set_meta("embedding.identity", self.embedder_identity())
        if dim:
            self.store.set_meta("embedding.dim", str(dim))

    # -- operations (implemented in sibling modules) ----------------------------

    def ingest(self, paths: list[str], **kwargs: Any) -> Any:
        """Store conversation turns verbatim; see memcli.ops.ingest."""
        from memcli.ops.ingest import ingest

        return ingest(self, paths, **kwargs)

    def ask(self, question: str, **kwargs: Any) -> Any:
        """Retrieve, pack and optionally answer; see memcli.ops.ask."""
        from memcli.ops.ask import ask

        return ask(self, question, **kwargs)

    def consolidate(self, **kwargs: Any) -> Any:
        """Distil unconsolidated turns into segments, facts, concepts, reflections and links;
        see memcli.ops.consolidate."""
        from memcli.ops.consolidate import consolidate

        return consolidate(self, **kwargs)

    def stats(self) -> dict[str, Any]:
        """Counts and settings of the store; see memcli.ops.inspect."""
        from memcli.ops.inspect import stats

        return stats(self)

    def node_view(self, node_id: str) -> dict[str, Any]:
        """One node with its neighbours and provenance; see memcli.ops.inspect."""
        from memcli.ops.inspect import node_view

        return node_view(self, node_id)

    def entity_view(self, name: str) -> dict[str, Any]:
        """One entity with its relations and timeline; see memcli.ops.entity."""
        from memcli.ops.entity import entity_view

        return entity_view(self, name)

    def export_graph(self, fmt: str = "graphml", compact: bool = False) -> str:
        """The space's graph as GraphML, JSON or DOT; see memcli.ops.graph_export."""
        from memcli.ops.graph_export import export_graph

        return export_graph(self, fmt, compact)

    def reindex(self, **kwargs: Any) -> dict[str, Any]:
        """Re-embed every node with the configured embedder; see memcli.ops.reindex."""
        from memcli.ops.reindex import reindex

        return reindex(self, **kwargs)

    def prune(self, selection: Any, **kwargs: Any) -> Any:
        """Forget the selected memories and what was derived only from them; see
        memcli.ops.prune."""
        from memcli.ops.prune import prune

        return prune(self, selection, **kwargs)
