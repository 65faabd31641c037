"""What every operation works on: one store, one space, the settings and the models.

`memcli.memory.Memory` (the library API) is this plus one method per operation; the
operations in this package take the base, so they never import the API above them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from memcli.config import Config, EmbeddingConfig
from memcli.errors import EmbeddingMismatch, NotFound, did_you_mean
from memcli.llm import ChatModel, Embedder, check_embedding, create_chat, create_embedder
from memcli.store import open_store
from memcli.store.reindex_rows import unfinished_reindex
from memcli.store.target import exists as target_exists
from memcli.store.target import file_path, remove_new

if TYPE_CHECKING:
    from memcli.store import Store

_UNSET: Any = object()
_M = TypeVar("_M", bound="MemoryBase")


class MemoryBase:
    """A store plus the models and settings used to read and write it.

    Models are created on first use, so work that never embeds never loads one. Pass
    `embedder=`/`chat=` to supply ready-made clients (tests, the benchmark runner). With
    `create=False` a missing database file is NotFound instead of a new empty store. One
    instance serves one thread at a time.
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
        self._space_known = False  # require_space found this space in the store
        target = cfg.db_path
        self.created = store is None and not target_exists(target)  # this Memory made the file
        if self.created and not create:
            raise NotFound(
                f"no memory store at {file_path(target)}",
                fix="ingest something first (memcli ingest FILE), or check --db / MEMCLI_DB",
            )
        self.store = store if store is not None else open_store(target, create=create)
        self._target = target
        self._embedder = embedder
        self._chat = chat
        self._chosen_model: str | None = None  # `auto`'s choice for a store's first turns

    def close(self, failed: bool = False) -> None:
        """Close the store; after a failed run, delete a file this Memory created if it
        is still empty, so a mistake leaves no stray database behind."""
        discard = failed and self.created and self._holds_nothing()
        self.store.close()
        if discard:
            remove_new(self._target)

    def require_space(self, option: str = "--space") -> None:
        """NotFound when the store holds spaces but not this one: a mistyped name (an
        empty store is an empty result, not an error). `option` names how to choose one."""
        if self._space_known:
            return
        spaces = self.store.spaces()
        self._space_known = self.space in spaces
        if not spaces or self._space_known:
            return
        raise NotFound(
            f"no space {self.space!r} in this store{did_you_mean(self.space, spaces)}",
            fix=f"pass {option} one of: {', '.join(spaces)} (`memcli ingest --space NAME` "
            "creates a space)",
        )

    def _holds_nothing(self) -> bool:
        try:
            return not self.store.spaces()
        except Exception:  # a broken store is left for the user to look at
            return False

    def __enter__(self: _M) -> _M:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(failed=exc_type is not None)  # a failed first write leaves no empty file

    # -- models ------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder | None:
        """The configured embedder (None when embeddings are off), checked against the store."""
        self.check_embedder()
        return self.load_embedder()

    def load_embedder(self) -> Embedder | None:
        """The configured embedder without comparing it to the store (for `reindex`)."""
        if self._embedder is _UNSET:
            self._embedder = create_embedder(self.embedding_config())
        return self._embedder

    def embedding_config(self) -> EmbeddingConfig:
        """The embedding settings with `model: auto` resolved (memcli.llm.choose_model): the
        local model the store's vectors came from, else the one chosen for the turns about
        to be stored (`choose_embedding`), else all-MiniLM-L6-v2."""
        emb = self.cfg.embedding
        if emb.model != "auto" or emb.provider != "local":
            return emb
        stored = self.stored_identity() or ""
        provider, _, model = stored.partition(":")
        if provider != "local":
            from memcli.llm.model_files import BUNDLED_MODEL

            model = self._chosen_model or BUNDLED_MODEL
        return dataclasses.replace(emb, model=model)

    def choose_embedding(self, texts: Iterable[str], model: str | None = None) -> None:
        """With `embedding.model: auto`, before a store's first vectors: choose its model
        from the texts about to be stored (English: all-MiniLM-L6-v2, else e5), or take
        `model` (an imported file's)."""
        emb = self.cfg.embedding
        if (emb.model == "auto" and emb.provider == "local" and emb.backend == "onnx"
                and not emb.model_dir and self._embedder is _UNSET
                and self.stored_identity() is None):  # fmt: skip
            from memcli.llm.choose_model import choose

            self._chosen_model = model or choose(texts)

    @property
    def chat(self) -> ChatModel | None:
        """The configured chat model, or None when `llm.provider` is `none`."""
        if self._chat is _UNSET:
            self._chat = create_chat(self.cfg.llm)
        return self._chat

    def embedder_identity(self) -> str:
        """`provider:model` of the embedder this Memory writes with (`none` when off)."""
        if self._embedder is _UNSET:
            emb = self.embedding_config()
            return "none" if emb.provider == "none" else f"{emb.provider}:{emb.model}"
        if self._embedder is None:
            return "none"
        return f"{self._embedder.provider}:{self._embedder.model}"

    def stored_identity(self) -> str | None:
        """`provider:model` the store's vectors were made with, or None for a fresh store."""
        return self.store.get_meta("embedding.identity")

    def check_embedder(self, lexical: bool = False) -> None:
        """Refuse a bad embedding config, and to compare or mix vectors of two models in
        one store (`lexical`: the error says the full text can still be asked)."""
        if self._embedder is _UNSET:
            check_embedding(self.embedding_config())
        stored = self.stored_identity()
        wanted = self.embedder_identity()
        if stored is not None and stored != wanted:
            stopped = unfinished_reindex(self.store)
            done = stopped[1] if stopped is not None and stopped[0] == wanted else None
            raise EmbeddingMismatch(stored, wanted, reindexed=done, lexical=lexical)

    def record_embedder(self, dim: int | None) -> None:
        """Note in `meta` which embedder the store now uses. Call inside a transaction."""
        if self.stored_identity() is None:
            self.store.set_meta("embedding.identity", self.embedder_identity())
        if dim:
            self.store.set_meta("embedding.dim", str(dim))

    def warm_up(self) -> None:
        """Load what a long-lived process reuses: the embedding model, an in-process copy
        of the store's vectors that keeps vector search fast on large stores, and a cache of
        graph reads (both kept in step with the file, results identical to plain reads).
        For servers and batch work; a one-off question is quicker without them."""
        embedder = self.embedder
        if embedder is not None and embedder.provider == "local":  # remote ones stay lazy
            embedder.embed(["warm up"])
        self.store.use_vector_index()
        self.store.use_read_cache()
