"""The library API: `Memory`, over one store and one space, one method per operation.

The CLI, the MCP server and Python programs call these methods; each one checks what the
API promises (a space the store holds, a question that is not empty) and hands the work to
its module of memcli.ops.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from memcli.errors import UsageError
from memcli.ops.base import MemoryBase

if TYPE_CHECKING:
    from memcli.consolidate.reports import ConsolidateReport
    from memcli.models import AddReport, Answer, IngestReport, PruneReport
    from memcli.ops.inspect import NodeView, StoreStats
    from memcli.ops.listing import ListQuery, MemoryPage
    from memcli.ops.prune import Selection
    from memcli.ops.reindex import ReindexReport
    from memcli.ops.transfer import ImportReport
    from memcli.progress import Progress

_API_SPACE = "space= (Memory.open)"  # how a library caller chooses a space


class Memory(MemoryBase):
    """A store plus the models and settings used to read and write it: the library API.

    Open one with `Memory.open` (settings from the usual places, as the CLI reads them):

        from memcli import Memory

        with Memory.open("~/memory.db") as mem:
            mem.add("We booked the Alfama hotel for 3-6 May", role="user", time="2024-03-02")
            print(mem.recall("Which hotel did we book?").context)

    `Memory(cfg)` takes a ready Config instead. Models are created on first use, so work
    that never embeds never loads one. Pass `embedder=`/`chat=` to supply ready-made
    clients (tests, the benchmark runner). With `create=False` a missing database file is
    NotFound instead of a new empty store. One Memory serves one thread at a time. Each
    operation is implemented in its module of memcli.ops.
    """

    @classmethod
    def open(
        cls,
        db: str | os.PathLike[str] | None = None,
        *,
        space: str | None = None,
        config: str | os.PathLike[str] | None = None,
        create: bool = True,
    ) -> Memory:
        """Open the store at `db` (default: the configured one, else
        ~/.local/share/memcli/memory.db), creating it unless `create` is False.

        Settings come from the config file `config` (else MEMCLI_CONFIG, ./memcli.yaml or
        the user's config file), MEMCLI_* environment variables and the defaults, exactly
        as for the CLI; `db` and `space` override them.

            >>> mem = Memory.open("~/memory.db", space="work")
        """
        from memcli.config import load_config

        if space is not None and not space.strip():
            raise UsageError("space must not be empty", fix="leave it out for 'default'")
        overrides = {"db": os.fspath(db) if db is not None else None, "space": space}
        cfg = load_config(os.fspath(config) if config is not None else None, overrides=overrides)
        return cls(cfg, create=create)

    def add(
        self,
        text: str,
        *,
        role: str | None = None,
        session: str | None = None,
        time: str | datetime | date | None = None,
        source: str | None = None,
        allow_forgotten: bool = False,
    ) -> AddReport:
        """Remember one piece of text, stored and embedded like an ingested turn.

        Without `time` it is dated now; without `session` it joins the day's session of its
        `source` (default "memcli-add"). The same text, role, session and time twice is
        stored once (`new` is False the second time), and not at all once `prune` forgot
        it (`forgotten` is True) unless `allow_forgotten`. See memcli.ops.add.

            >>> report = mem.add("The demo moved to Thursday 10:00", role="user")
            >>> report.node_id
            'ep17'
        """
        from memcli.ops.add import add

        return add(
            self, text, role=role, session=session, time=time, source=source,
            allow_forgotten=allow_forgotten,
        )  # fmt: skip

    def ingest(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        fmt: str | None = None,
        skip_invalid: bool = False,
        stdin: BinaryIO | None = None,
        progress: Progress | None = None,
        allow_forgotten: bool = False,
        opener: Callable[[str], BinaryIO] | None = None,
    ) -> IngestReport:
        """Store every turn of conversation files verbatim (`-` reads `stdin`); idempotent.

        `fmt` is jsonl, chat, locomo, transcript, chatgpt or claude (default: detected from
        the suffix and content). Bad records raise InvalidInput and nothing is written,
        unless `skip_invalid`. Turns `prune` forgot are skipped (counted in `forgotten`)
        unless `allow_forgotten`. `opener` opens each named file (default: by name). See
        memcli.ops.ingest.

            >>> mem.ingest("chat.jsonl").new
            16
        """
        from memcli.ops.ingest import IngestOptions, ingest

        items = [paths] if isinstance(paths, (str, os.PathLike)) else paths
        names = [os.fspath(p) for p in items]
        options = IngestOptions(fmt, skip_invalid, allow_forgotten, opener)
        return ingest(self, names, options, stdin=stdin, progress=progress)

    def ask(
        self,
        question: str,
        *,
        strategy: str | None = None,
        k: int | None = None,
        context_only: bool = False,
        explain: bool = False,
    ) -> Answer:
        """Retrieve memories for a question, pack them, and answer with the configured LLM.

        With `context_only` no LLM is called: the Answer holds the packed `context`, its
        subject groups (`about`) and the ranked `hits`. Without an LLM configured, asking
        for an answer raises LLMNotConfigured. `strategy`: hybrid (default), dwpr, gam,
        lexical, semantic, or the entity-graph traversals beam, watercircles and astar.
        With `explain`, each hit's `why` and `via` say why it ranked, where the strategy
        can (memcli.retrieval.explain); the ranking is the same.

            >>> print(mem.ask("Which hotel did we book?", context_only=True).context)
        """
        from memcli.ops.ask import ask

        self.require_space(_API_SPACE)
        return ask(
            self, question, strategy=strategy, k=k, context_only=context_only, explain=explain
        )

    def recall(
        self,
        question: str,
        *,
        strategy: str | None = None,
        k: int | None = None,
        explain: bool = False,
    ) -> Answer:
        """The packed memory and ranked hits for a question, without an LLM (`ask` with
        `context_only=True`)."""
        return self.ask(question, strategy=strategy, k=k, context_only=True, explain=explain)

    def consolidate(
        self,
        *,
        flush: bool = False,
        stages: Sequence[str] | None = None,
        limit: int | None = None,
        dry_run: bool = False,
        no_llm: bool = False,
        progress: Progress | None = None,
    ) -> ConsolidateReport:
        """Distil unconsolidated turns into segments, facts, concepts, reflections and links.

        `flush` also closes the newest session's buffer; `stages` picks stages by name,
        `limit` caps the units of work per stage; `no_llm` runs only the stages that need
        no model. Returns at once with `locked=True` when another process is consolidating.
        See memcli.ops.consolidate.

            >>> mem.consolidate(flush=True, no_llm=True).locked
            False
        """
        from memcli.consolidate.options import ConsolidateOptions
        from memcli.ops.consolidate import consolidate

        options = ConsolidateOptions.of(
            flush=flush, stages=stages, limit=limit, dry_run=dry_run, no_llm=no_llm
        )
        return consolidate(self, options, progress)

    def prune(
        self,
        selection: Selection,
        *,
        dry_run: bool = False,
        vacuum: bool = False,
        now: datetime | None = None,
    ) -> PruneReport:
        """Forget the selected memories and what was derived only from them, in one
        transaction; with `dry_run`, only report what would go. `now` is the moment
        `older_than` counts back from (default: the current time). See memcli.ops.prune.

            >>> from memcli import Selection
            >>> mem.prune(Selection(sessions=("trip",)), dry_run=True).removed
            {'episode': 12, 'segment': 2}
        """
        from memcli.ops.prune import prune

        return prune(self, selection, dry_run=dry_run, vacuum=vacuum, now=now)

    def stats(self) -> StoreStats:
        """Counts by node kind and edge type, spaces, embedding model, file size and
        consolidation health of this space (what `memcli inspect` shows)."""
        from memcli.ops.inspect import stats

        self.require_space(_API_SPACE)
        return stats(self)

    def node_view(self, node_id: str) -> NodeView:
        """One node (`ep12`, `fa3`...) with its neighbours and provenance; NodeNotFound when
        this space has no such node."""
        from memcli.ops.inspect import node_view

        return node_view(self, node_id)

    def entity_view(self, name: str) -> dict[str, Any]:
        """One entity with its relations and timeline; see memcli.ops.entity."""
        from memcli.ops.entity import entity_view

        return entity_view(self, name)

    def export_graph(self, fmt: str = "graphml", compact: bool = False) -> str:
        """The space's graph as GraphML, JSON or DOT; see memcli.ops.graph_export."""
        from memcli.ops.graph_export import export_graph

        self.require_space(_API_SPACE)
        return export_graph(self, fmt, compact)

    def reindex(self, progress: Progress | None = None) -> ReindexReport:
        """Re-embed every node with the configured embedder, continuing a reindex to the
        same model that was stopped (KeyboardInterrupt keeps what was committed); see
        memcli.ops.reindex."""
        from memcli.ops.reindex import reindex

        return reindex(self, progress=progress)

    def list_memories(self, query: ListQuery) -> MemoryPage:
        """One page of the space's memories, newest first, filtered as `query` says
        (what `memcli list` shows). See memcli.ops.listing.

            >>> from memcli import ListQuery
            >>> [m.node_id for m in mem.list_memories(ListQuery(limit=3)).items]
        """
        from memcli.ops.listing import list_memories

        self.require_space(_API_SPACE)
        return list_memories(self, query)

    def export_space(self, out: TextIO, *, vectors: bool = False) -> dict[str, int]:
        """Write the space to `out` as a JSON Lines dump (with the vectors if `vectors`);
        returns the counts written. See memcli.ops.transfer."""
        from memcli.ops.transfer import export_space

        self.require_space(_API_SPACE)
        return export_space(self, out, vectors=vectors)

    def import_dump(
        self,
        path: str,
        *,
        episodes_only: bool = False,
        dry_run: bool = False,
        stdin: BinaryIO | None = None,
        progress: Progress | None = None,
        allow_forgotten: bool = False,
    ) -> ImportReport:
        """Add the memories of a dump made by `export_space` (`-` reads `stdin`), but not
        turns the space forgot unless `allow_forgotten`; with `dry_run`, only report what
        would be added. See memcli.ops.transfer."""
        from memcli.ops.transfer import import_dump

        return import_dump(
            self, path, episodes_only=episodes_only, dry_run=dry_run, stdin=stdin,
            progress=progress, allow_forgotten=allow_forgotten,
        )  # fmt: skip
