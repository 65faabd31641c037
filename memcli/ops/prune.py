"""`memcli prune`: forget by source, session, space, age or node, cascading to derived nodes.

Selectors combine with AND; the values of one repeated selector (`--source a --source b`)
combine with OR. Two families:

- episode selectors (source, session, older-than/before) pick episodes;
- node selectors (node, superseded, min-belief) pick nodes of any kind.

With only episode selectors the picked episodes go. With both, the picked nodes go when they
are among those episodes or derived from them ("superseded facts from session X"). Whatever
goes, every derived node left without support goes too (see memcli.store.prune).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memcli.dates import as_utc, parse_iso
from memcli.errors import DatabaseError, NotFound, UsageError
from memcli.models import KIND_PREFIX, PruneReport, node_public_id, parse_node_id, typed_node_id
from memcli.ops import prune_vectors
from memcli.ops.sources import Digest, match_sources
from memcli.text import one_line, truncate

if TYPE_CHECKING:
    from memcli.ops.base import MemoryBase
    from memcli.store import Store

_DURATION = re.compile(r"\s*(\d+)\s*(min|h|d|w|mo|y)\s*")
_UNITS = "min (minutes), h (hours), d (days), w (weeks), mo (months), y (years)"
EXAMPLES_PER_KIND = 3


def parse_duration(text: str) -> Any:
    """A relativedelta for `30d`, `12h`, `2w`, `6mo`, `1y`, `90min`; UsageError otherwise."""
    from dateutil.relativedelta import relativedelta

    match = _DURATION.fullmatch(text)
    if not match or int(match.group(1)) == 0:
        hint = " ('m' is ambiguous)" if re.fullmatch(r"\s*\d+\s*m\s*", text) else ""
        raise UsageError(
            f"--older-than expects a positive number and a unit, got {text!r}{hint}",
            fix=f"units: {_UNITS}; e.g. --older-than 30d",
        )
    n, unit = int(match.group(1)), match.group(2)
    names = {"min": "minutes", "h": "hours", "d": "days", "w": "weeks", "mo": "months"}
    try:
        return relativedelta(**{names.get(unit, "years"): n})
    except (OverflowError, ValueError):
        raise _before_year_one(text) from None


def _before_year_one(text: str) -> UsageError:
    return UsageError(
        f"--older-than {text.strip()} reaches back before year 1",
        fix="pass a shorter duration, e.g. --older-than 100y",
    )


def older_than_cutoff(text: str, now: datetime) -> datetime:
    """`now` minus the duration; UsageError when that falls before year 1."""
    try:
        return now - parse_duration(text)
    except (OverflowError, ValueError):
        raise _before_year_one(text) from None


def parse_date(text: str) -> datetime:
    """An ISO date or date-time as an aware datetime (no zone = UTC); UsageError otherwise."""
    moment = parse_iso(text.strip())
    if moment is None:
        raise UsageError(
            f"--before expects an ISO date such as 2024-03-01 or 2024-03-01T12:00, got {text!r}"
        )
    return as_utc(moment)


def _episode_time(timestamp: str | None) -> datetime | None:
    """A stored episode timestamp as an aware datetime (no zone = UTC), None when absent."""
    moment = parse_iso(timestamp)
    return None if moment is None else as_utc(moment)


@dataclass(frozen=True)
class Selection:
    """What to forget. Build it from the command line, `check()` it, pass it to prune()."""

    sources: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    whole_space: bool = False  # the command's own --space: alone, it selects the whole space
    older_than: str | None = None
    before: str | None = None
    nodes: tuple[str, ...] = ()
    superseded: bool = False
    min_belief: float | None = None
    orphans: bool = False
    # Reads a file a source names, to match it by content (None: any file; the MCP server
    # reads only those its clients may, memcli.mcp.access).
    file_digest: Digest | None = field(default=None, compare=False)

    @property
    def by_episode(self) -> bool:
        """Whether an episode selector is given."""
        return bool(self.sources or self.sessions or self.older_than or self.before)

    @property
    def by_node(self) -> bool:
        """Whether a node selector is given."""
        return bool(self.nodes or self.superseded or self.min_belief is not None)

    @property
    def everything(self) -> bool:
        """The whole space, and nothing narrower, is selected."""
        return self.whole_space and not (self.by_episode or self.by_node or self.orphans)

    @property
    def empty(self) -> bool:
        """Nothing selected at all."""
        return not (self.by_episode or self.by_node or self.orphans or self.whole_space)

    def check(self, vacuum: bool = False) -> None:
        """Raise UsageError for a selection that is missing, malformed or contradictory."""
        if self.empty and not vacuum:
            raise UsageError(
                "prune needs at least one selector; it never removes everything by default",
                fix="pass --source, --session, --older-than, --before, --node, --superseded, "
                "--min-belief, --orphans or --space NAME (see memcli prune --help)",
            )
        if self.orphans and self.by_episode:
            raise UsageError(
                "--orphans cannot be combined with --source, --session, --older-than or "
                "--before: orphans have no episodes left to select them by"
            )
        if self.min_belief is not None and not 0.0 <= self.min_belief <= 1.0:
            raise UsageError(f"--min-belief must be between 0 and 1, got {self.min_belief}")
        if self.older_than is not None:
            older_than_cutoff(self.older_than, datetime.now(timezone.utc))
        if self.before is not None:
            parse_date(self.before)
        for value in self.nodes:
            if parse_node_id(typed_node_id(value)) is None:
                raise UsageError(
                    f"--node expects an id such as ep12 or fa3, got {value!r}",
                    fix="find ids with `memcli list` (`memcli list --grep WORD`)",
                )

    def cutoff(self, now: datetime) -> datetime | None:
        """Episodes strictly older than this are selected (the earlier of the two limits)."""
        limits = []
        if self.older_than is not None:
            limits.append(older_than_cutoff(self.older_than, now))
        if self.before is not None:
            limits.append(parse_date(self.before))
        return min(limits) if limits else None


@dataclass
class _Plan:
    nodes: set[int] = field(default_factory=set)
    unlink: list[tuple[int, int]] = field(default_factory=list)  # (episode, source) pairs
    sources: set[int] = field(default_factory=set)
    kept_shared: int = 0


def _selected_episodes(
    store: Store, space: str, sel: Selection, source_ids: set[int] | None, now: datetime
) -> set[int]:
    """Episodes meeting every episode selector; unknown sessions are NotFound."""
    for pattern in sel.sessions:
        if store.sessions_matching(space, pattern) == 0:
            known = ", ".join(store.session_names(space)) or "none"
            raise NotFound(
                f"--session {pattern!r} matches no episodes in space {space!r}",
                fix=f"sessions include: {known}",
            )
    times = store.episode_times(
        space, source_ids=source_ids, sessions=sel.sessions if sel.sessions else None
    )
    cutoff = sel.cutoff(now)
    if cutoff is None:
        return set(times)
    # Episodes without a timestamp never match a time selector.
    return {i for i, ts in times.items() if (t := _episode_time(ts)) is not None and t < cutoff}


def _by_source(store: Store, episodes: set[int], source_ids: set[int], plan: _Plan) -> None:
    """An episode another (unselected) source also holds stays; only its link goes."""
    for episode, links in store.source_links(episodes).items():
        if links - source_ids:
            plan.unlink.extend((episode, s) for s in sorted(links & source_ids))
            plan.kept_shared += 1
        else:
            plan.nodes.add(episode)


def _picked_nodes(store: Store, space: str, sel: Selection) -> set[int]:
    """Nodes meeting every node selector; a --node id missing from the space is NotFound."""
    ids = None
    if sel.nodes:
        ids = {store.node_by_public_id(v, space).id for v in sel.nodes}
    kinds: set[str] | None = None
    if sel.superseded:
        kinds = {"fact"}
    if sel.min_belief is not None:
        kinds = (kinds or {"fact", "reflection"}) & {"fact", "reflection"}
    return store.select_nodes(
        space,
        ids=ids,
        kinds=kinds,
        status="superseded" if sel.superseded else None,
        belief_below=sel.min_belief,
    )


def _emptied_sources(store: Store, plan: _Plan, candidates: set[int]) -> set[int]:
    """Candidate sources none of whose episodes stay linked after the plan."""
    gone = set(plan.nodes)
    candidates |= {s for links in store.source_links(gone).values() for s in links}
    candidates |= {s for _, s in plan.unlink}
    unlinked = set(plan.unlink)
    return {
        source
        for source, episodes in store.linked_episodes(candidates).items()
        if all(e in gone or (e, source) in unlinked for e in episodes)
    }


def make_plan(mem: MemoryBase, sel: Selection, now: datetime) -> _Plan:
    """Every node, provenance link and source row the selection removes."""
    store, space = mem.store, mem.space
    plan = _Plan()
    if sel.empty:  # --vacuum alone
        return plan
    if sel.everything:
        plan.nodes = store.select_nodes(space)
        plan.sources = {r["id"] for r in store.sources(space)}
        return plan
    source_ids = match_sources(store, space, sel.sources, sel.file_digest) if sel.sources else None
    targets: set[int] | None = None
    if sel.by_episode:
        episodes = _selected_episodes(store, space, sel, source_ids, now)
        if sel.by_node:
            targets = episodes | store.derived_from(episodes)
        elif source_ids is not None:
            _by_source(store, episodes, source_ids, plan)
            targets = set(plan.nodes)
        else:
            targets = episodes
    if sel.by_node:
        picked = _picked_nodes(store, space, sel)
        targets = picked if targets is None else targets & picked
    if sel.orphans:
        found = store.orphans(space)
        targets = found if targets is None else targets & found
    plan.nodes = store.cascade(targets or set())
    plan.sources = _emptied_sources(store, plan, set(source_ids or ()))
    return plan


def _fill_report(store: Store, plan: _Plan, report: PruneReport, space: str) -> None:
    kinds = store.kinds_of(sorted(plan.nodes))
    order = {k: i for i, k in enumerate(KIND_PREFIX)}
    by_kind: dict[str, list[int]] = {}
    for node_id in sorted(kinds):
        by_kind.setdefault(kinds[node_id], []).append(node_id)
    report.removed = {
        k: len(v) for k, v in sorted(by_kind.items(), key=lambda kv: order.get(kv[0], 99))
    }
    shown = [i for k in report.removed for i in by_kind[k][:EXAMPLES_PER_KIND]]
    nodes = store.nodes_by_ids(shown)
    report.examples = [
        {
            "node_id": node_public_id(n.kind, n.id),
            "kind": n.kind,
            "text": truncate(one_line(n.text), 80),
        }
        for n in (nodes[i] for i in shown)
    ]
    report.edges = len(store.edge_ids_touching(plan.nodes))
    paths = {r["id"]: r["path"] for r in store.sources(space)}
    report.sources = [paths[s] for s in sorted(plan.sources) if s in paths]
    report.kept_shared = plan.kept_shared
    report.forgotten = len(store.turn_keys(space, plan.nodes))


def _apply(mem: MemoryBase, plan: _Plan, sel: Selection, report: PruneReport) -> int:
    """Remove what the plan lists; return how many cached model replies were dropped."""
    store = mem.store
    bridges = store.next_bridges(plan.nodes)
    after = set() if sel.everything else prune_vectors.followers(store, plan.nodes)
    store.unlink_sources(plan.unlink)
    # Tombstones (content keys, no text) keep the turns from being stored again.
    store.record_forgotten(mem.space, plan.nodes)
    store.delete_nodes(sorted(plan.nodes))
    store.add_edges(mem.space, bridges)
    store.delete_sources(plan.sources)
    prune_vectors.embed_again(mem, after, bridges, report)
    if sel.everything:
        store.delete_runs(mem.space)
    # Cached replies cannot be traced to nodes, and they may quote what was just forgotten.
    return store.clear_llm_cache() if plan.nodes else 0


def prune(
    mem: MemoryBase,
    selection: Selection,
    *,
    dry_run: bool = False,
    vacuum: bool = False,
    now: datetime | None = None,
) -> PruneReport:
    """Remove the selected nodes and everything derived only from them, in one transaction."""
    selection.check(vacuum=vacuum)
    store = mem.store
    report = PruneReport(dry_run=dry_run, bytes_before=store.file_bytes())
    moment = now or datetime.now(timezone.utc)
    if dry_run:
        with store.reading():
            plan = make_plan(mem, selection, moment)
            _fill_report(store, plan, report, mem.space)
            # What the real run drops: the whole reply cache whenever any node goes.
            report.cache_entries = store.llm_cache_size() if plan.nodes else 0
    else:
        with _consolidation_lock(store), store.transaction():
            plan = make_plan(mem, selection, moment)
            _fill_report(store, plan, report, mem.space)
            report.cache_entries = _apply(mem, plan, selection, report)
    if vacuum and not dry_run:
        report.vacuumed = store.compact()
        if not report.vacuumed:
            raise DatabaseError(
                f"removed {report.total} nodes, but other processes kept reading, so the -wal "
                "file may still hold old pages",
                fix="run `memcli prune --vacuum --yes` again once they finish",
            )
    report.bytes_after = store.file_bytes()
    return report


@contextmanager
def _consolidation_lock(store: Store) -> Iterator[None]:
    """Hold the consolidation lock: a running consolidation would otherwise write facts
    about episodes this prune has just removed."""
    with store.consolidation_lock(refused="nothing was removed") as holder:
        if holder is not None:
            raise DatabaseError(
                f"a consolidation is running (pid {holder['pid']} on {holder['host']}, "
                f"since {holder['since']}); nothing was removed",
                fix="run prune again when it has finished",
            )
        yield
