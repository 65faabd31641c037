"""The store backend interface: every method code outside memcli/store/ calls on a store.

Two backends implement it: SQLite (memcli.store.sqlite, one file, the default) and Postgres
with pgvector (memcli.store.pg, one database shared by many processes on many hosts).
`open_store(target)` picks one by the target's form. A method the rest of memcli starts to
call belongs here first, and in both backends (tests/store/test_store_interface.py checks that
each backend has every method with the same parameters); one whose body would be the same
in both is written once, in a mixin of the neutral core (memcli.store).

Ids are integers the store gives out and never gives again; spaces are plain names; vectors
are sequences of floats (numpy arrays on the way out). "Call inside a transaction" means
inside `with store.transaction():`, whose writes commit together or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memcli.models import Edge, Node
    from memcli.store.edges import EdgeRow
    from memcli.store.listing import NodeFilter
    from memcli.store.words import Matrix
    from memcli.store.work import CachedReply


class Store(Protocol):
    """A migrated connection to one memcli store."""

    read_only: str | None  # why this process may read but not write the store, or None

    @property
    def location(self) -> str:
        """Where the store lives, for messages: a file path, or a URL without its password."""
        ...

    # -- the connection ----------------------------------------------------------------

    def close(self) -> None: ...
    def __enter__(self) -> Store: ...
    def __exit__(self, *exc: object) -> None: ...
    def require_writable(self) -> None:
        """ReadOnlyStore, with the fix, when this process may only read the store."""

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction: everything inside commits together or not at all."""

    def reading(self) -> AbstractContextManager[Any]:
        """A read transaction: one consistent snapshot for several queries."""

    def schema_version(self) -> int:
        """How many of this backend's migrations the store has had."""

    def use_read_cache(self) -> None:
        """Keep graph reads in memory while the store is unchanged (long-lived processes)."""

    def use_vector_index(self) -> None:
        """Make vector search fast for a long-lived process (same results)."""

    def file_bytes(self) -> int:
        """How much disk the store takes."""

    def compact(self) -> bool:
        """Scrub deleted content from disk; False when other readers kept some of it."""

    # -- meta --------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def delete_meta(self, key: str) -> None: ...

    # -- nodes -------------------------------------------------------------------------

    def insert_nodes(self, space: str, kind: str, rows: Sequence[Mapping[str, Any]]) -> list[int]:
        """Insert nodes of one space and kind with their full-text rows; their ids, in order."""

    def insert_node(
        self,
        space: str,
        kind: str,
        text: str,
        *,
        speaker: str | None = None,
        session: str | None = None,
        seq: int | None = None,
        timestamp: str | None = None,
        ref: str | None = None,
        belief: float | None = None,
        status: str | None = None,
        key: str | None = None,
        props: dict[str, Any] | None = None,
    ) -> int:
        """Insert one node and its full-text row; its id. Call inside a transaction."""

    def update_node(self, node_id: int, **fields: Any) -> None:
        """Change columns of a node (text changes reach the full-text index)."""

    def delete_nodes(self, node_ids: Sequence[int]) -> int:
        """Remove nodes with their edges, vectors and full-text rows."""

    def get_node(self, node_id: int) -> Node | None: ...
    def node_by_public_id(self, public_id: str, space: str) -> Node:
        """The node of an `ep12`-style id in a space; NodeNotFound otherwise."""

    def nodes_by_ids(self, ids: Iterable[int]) -> dict[int, Node]:
        """Many nodes at once, by id (missing ids are absent)."""

    def iter_nodes(self, space: str, kind: str | None = None, order: str = "id") -> Iterator[Node]:
        """Every node of a space (optionally one kind), ordered by `id` or `time`."""

    def all_nodes_for_embedding(self) -> list[tuple[int, str, str, str, str | None]]:
        """(id, space, kind, text, speaker) of every node in every space."""

    def existing_keys(self, space: str, kind: str, keys: Sequence[str]) -> set[str]:
        """Which of `keys` are already stored for this space and kind."""

    def ids_for_keys(self, space: str, kind: str, keys: Sequence[str]) -> list[int]:
        """Ids of the nodes stored under these content keys."""

    def ids_by_key(self, space: str, kind: str, keys: Sequence[str]) -> dict[str, int]:
        """Content key -> id of the space's nodes of one kind under those keys."""

    def session_tail(self, space: str, session: str) -> tuple[int, int] | None:
        """(id, seq) of the last episode of a session, or None for a new session."""

    def kinds_of(self, node_ids: Sequence[int]) -> dict[int, str]:
        """The kind of each of the given nodes (missing ids are absent)."""

    def kinds_present(self, space: str, kinds: Sequence[str]) -> set[str]:
        """Which of `kinds` have at least one node in the space."""

    def sources_of(self, node_ids: Iterable[int]) -> dict[int, list[str]]:
        """Refs of the episodes each derived node came from, in conversation order."""

    def source_episodes(self, node_id: int) -> list[tuple[str, str | None]]:
        """(episode id, ref) of the episodes a derived node came from."""

    def segments_of(self, node_ids: Iterable[int]) -> dict[int, list[int]]:
        """The topic segments each memory rests on."""

    def index_cjk_again(self, rows: Iterable[tuple[int, str, str, str, str | None]]) -> int:
        """Rewrite the full-text rows of nodes whose text holds CJK characters."""

    # -- sources -----------------------------------------------------------------------

    def source_by_sha(self, space: str, sha256: str) -> tuple[int, int] | None:
        """(id, episode count) of an already-ingested file with this content hash."""

    def insert_source(self, space: str, path: str, sha256: str, fmt: str, episodes: int) -> int:
        """Record an ingested file; its id (the existing one when it is already there)."""

    def source_paths(self, node_id: int) -> list[str]:
        """Paths of the files an episode was ingested from."""

    def link_sources(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Record which source file(s) each episode came from."""

    def sources(self, space: str) -> list[dict[str, Any]]:
        """The source rows of a space (id, path, sha256, format, episodes, ingested_at)."""

    # -- edges -------------------------------------------------------------------------

    def add_edges(self, space: str, edges: Iterable[Edge]) -> int:
        """Insert edges, ignoring (src, dst, type) repeats; how many were new."""

    def set_edge_props(self, edge: Edge) -> None:
        """Replace the properties of a stored edge."""

    def edges_of(self, node_ids: Sequence[int], types: Sequence[str] | None = None) -> list[Edge]:
        """Every edge touching any of the nodes, optionally of some types."""

    def edge_rows(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[EdgeRow]:
        """(src, dst, type, weight) of every edge touching any of the nodes, sorted."""

    def edges_within(
        self, node_ids: Sequence[int], types: Sequence[str] | None = None
    ) -> list[EdgeRow]:
        """(src, dst, type, weight) of every edge with both ends among the nodes, sorted."""

    def degrees(self, node_ids: Sequence[int]) -> dict[int, int]:
        """How many edges each node has (0 for none)."""

    def iter_edges(self, space: str) -> Iterator[Edge]:
        """Every edge of a space, in insertion order."""

    # -- search ------------------------------------------------------------------------

    def text_search(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, BM25 score, higher is better) for a free-text query within a space."""

    def text_search_columns(
        self, space: str, query: str, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float, float, float, float]]:
        """As `text_search`, each row with the BM25 of each searched part of it apart:
        (node id, weighted total, text, speaker, context)."""

    def speaker_named(self, space: str, word: str) -> str | None:
        """The speaker of the space's memories whose name holds this word (any case)."""

    def has_vectors(self) -> bool:
        """Whether the store holds a vector table (made with the first vectors)."""

    def vector_dim(self) -> int | None: ...
    def ensure_vectors(self, dim: int) -> None:
        """Make room for `dim`-sized vectors; DatabaseError if the store holds another size."""

    def drop_vectors(self) -> None: ...
    def put_vectors(self, rows: Iterable[tuple[int, str, str, Any]]) -> None:
        """Store (node id, space, kind, vector) rows, replacing earlier vectors."""

    def vector_search(
        self, space: str, vector: Any, limit: int, kinds: Sequence[str] | None = None
    ) -> list[tuple[int, float]]:
        """(node id, cosine similarity) of the nearest nodes, best first, ties by id."""

    def get_vectors(self, node_ids: Sequence[int]) -> dict[int, Any]:
        """Stored vectors of the given nodes as numpy arrays (absent when none)."""

    # -- an unfinished reindex (memcli.store.reindex_rows) ------------------------------

    def reindex_digests(self) -> dict[int, str]:
        """Node id -> digest of the text of each vector a reindex has made so far."""

    def put_reindex_vectors(self, rows: Sequence[tuple[int, str, Any]]) -> None:
        """Keep (node id, digest, vector) rows made by a reindex, apart from the vectors."""

    def reindex_vectors(self, node_ids: Sequence[int]) -> dict[int, Any]:
        """The vectors a reindex made of these nodes (absent when none)."""

    def drop_reindex_vectors(self) -> None: ...

    # -- the words of turns ------------------------------------------------------------

    def unembedded_words(
        self, space: str, limit: int | None = None, among: Sequence[str] | None = None
    ) -> list[str]:
        """Words of the space's turns without a vector yet, alphabetically."""

    def count_unembedded_words(self, space: str, among: Sequence[str] | None = None) -> int: ...
    def word_spaces(self) -> list[str]: ...
    def put_word_vectors(self, space: str, rows: Sequence[tuple[str, Any]]) -> None: ...
    def forget_word_vectors(self) -> int: ...
    def word_vector_rows(self, space: str) -> Iterable[tuple[str, bytes]]: ...
    def word_vectors(self, space: str, words: Sequence[str]) -> dict[str, Any]: ...
    def word_matrix(self, space: str) -> Matrix: ...

    # -- consolidation bookkeeping -----------------------------------------------------

    def cache_get(self, key: str) -> CachedReply | None: ...
    def cache_put(self, key: str, provider: str, model: str, reply: CachedReply) -> None:
        """Remember a model reply, committed at once (from any thread)."""

    def cache_delete(self, key: str) -> None: ...
    def llm_cache_size(self) -> int: ...
    def clear_llm_cache(self) -> int: ...
    def run_start(self, space: str, stage: str) -> int: ...
    def run_finish(
        self,
        run_id: int,
        status: str,
        counters: dict[str, int],
        last_error: str | None,
        extra: dict[str, int] | None = None,
    ) -> None: ...
    def last_runs(self, space: str) -> list[dict[str, Any]]: ...
    def run_extra_totals(self, space: str, stage: str) -> dict[str, int]: ...
    def run_totals(self, space: str) -> dict[str, int]: ...
    def runs_interrupted(self, space: str) -> int: ...
    def delete_runs(self, space: str) -> int: ...
    def mark_processed(self, space: str, stage: str, node_ids: Iterable[int]) -> None: ...
    def unprocessed(self, space: str, stage: str, kind: str = "episode") -> list[int]: ...
    def count_failed(self, space: str, stage: str, node_ids: Iterable[int]) -> dict[int, int]: ...
    def processed_among(self, stage: str, node_ids: Sequence[int]) -> set[int]: ...
    def run_page(self, space: str, limit: int, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Consolidation runs of a space, newest first (`extra` parsed), and how many."""

    def consolidation_lock(
        self, refused: str = "nothing was done"
    ) -> AbstractContextManager[dict[str, Any] | None]:
        """Hold the consolidation lock for the block (yield None), or yield its live holder;
        DatabaseError ending in `refused` for a holder that cannot be checked."""

    def force_unlock(self, name: str) -> dict[str, Any] | None:
        """Remove a lock whose holder cannot be running: the lock removed, or None when none
        was held; DatabaseError while its holder runs."""

    # -- counts ------------------------------------------------------------------------

    def spaces(self) -> list[str]: ...
    def count_nodes(self, space: str) -> dict[str, int]: ...
    def count_edges(self, space: str) -> dict[str, int]: ...
    def count_sessions(self, space: str) -> int: ...
    def count_space_nodes(self, space: str) -> int: ...

    # -- browsing ----------------------------------------------------------------------

    def list_nodes(
        self, space: str, where: NodeFilter, limit: int | None, offset: int = 0
    ) -> tuple[list[Node], int]:
        """One page of the matching nodes, newest first, and how many match in all."""

    def session_page(
        self, space: str, limit: int, offset: int = 0
    ) -> tuple[list[dict[str, Any]], int]:
        """Sessions oldest first (session, first, last, turns), a page, and how many."""

    def session_turns(self, space: str, session: str) -> list[Node]:
        """The turns of one session in their order (the name taken literally)."""

    def sessions_missing(self, space: str, patterns: Sequence[str]) -> list[str]: ...
    def session_names(self, space: str, limit: int = 10) -> list[str]: ...

    # -- forgetting --------------------------------------------------------------------

    def episode_times(
        self,
        space: str,
        *,
        source_ids: Iterable[int] | None = None,
        sessions: Iterable[str] | None = None,
    ) -> dict[int, str | None]: ...
    def sessions_matching(self, space: str, pattern: str) -> int: ...
    def select_nodes(
        self,
        space: str,
        *,
        ids: Iterable[int] | None = None,
        kinds: Iterable[str] | None = None,
        status: str | None = None,
        belief_below: float | None = None,
    ) -> set[int]: ...
    def source_links(self, episode_ids: Iterable[int]) -> dict[int, set[int]]: ...
    def linked_episodes(self, source_ids: Iterable[int]) -> dict[int, set[int]]: ...
    def derived_from(self, origin_ids: Iterable[int]) -> set[int]: ...
    def cascade(self, removed: Iterable[int]) -> set[int]: ...
    def orphans(self, space: str) -> set[int]: ...
    def edge_ids_touching(self, node_ids: Iterable[int]) -> set[int]: ...
    def next_bridges(self, removed: set[int]) -> list[Edge]: ...
    def unlink_sources(self, pairs: Iterable[tuple[int, int]]) -> None: ...
    def delete_sources(self, source_ids: Iterable[int]) -> None: ...

    # -- tombstones of forgotten turns -------------------------------------------------

    def turn_keys(self, space: str, node_ids: Iterable[int]) -> list[str]: ...
    def record_forgotten(self, space: str, node_ids: Iterable[int]) -> int: ...
    def put_forgotten(self, space: str, rows: Sequence[tuple[str, str]]) -> int: ...
    def forgotten_keys(self, space: str, keys: Sequence[str]) -> set[str]: ...
    def allow_again(self, space: str, keys: Sequence[str]) -> int: ...
    def forgotten_rows(self, space: str) -> list[tuple[str, str]]: ...
    def count_forgotten(self, space: str) -> int: ...

    # -- export and import -------------------------------------------------------------

    def exported_columns(self, table: str) -> list[str]:
        """The columns of `nodes` or `edges` that a dump carries, in table order."""

    def space_sources(self, space: str) -> list[dict[str, Any]]: ...
    def space_node_rows(self, space: str) -> Iterator[dict[str, Any]]: ...
    def space_edge_rows(self, space: str) -> Iterator[dict[str, Any]]: ...
    def space_source_links(self, space: str) -> dict[int, list[int]]: ...
    def space_marks(self, space: str) -> dict[int, list[str]]: ...
    def max_node_id(self) -> int:
        """The highest node id the store has ever given out (0 for a new store)."""

    def put_node_rows(self, space: str, rows: Sequence[dict[str, Any]]) -> None: ...
    def put_edge_rows(self, space: str, rows: Iterable[dict[str, Any]]) -> int: ...
    def put_source_row(self, space: str, row: dict[str, Any]) -> int: ...
