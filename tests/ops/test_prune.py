"""`memcli prune` in the library: selectors and the provenance cascade on a hand-built graph."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memcli.config import Config, EmbeddingConfig
from memcli.errors import NodeNotFound, NotFound, UsageError
from memcli.memory import Memory
from memcli.models import Edge, PruneReport
from memcli.ops.prune import Selection, parse_duration
from memcli.store.work import CachedReply
from tests.prune_graph import ALL, Graph, build, edge_set, remaining
from tests.reliability import integrity
from tests.stores import StoreCache

NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[Memory]:
    """A Memory over a new, empty store."""
    cfg = Config(db=str(tmp_path / "m.db"), embedding=EmbeddingConfig(provider="none"))
    memory = Memory(cfg)
    yield memory
    memory.close()


@pytest.fixture
def graph_mem(stores: StoreCache, tmp_path: Path) -> Iterator[tuple[Memory, Graph]]:
    """A Memory over a copy of the hand-built graph (`tests.prune_graph.build`), and its ids."""
    built = stores.copy("prune-graph", tmp_path / "m.db")
    cfg = Config(db=str(built.path), embedding=EmbeddingConfig(provider="none"))
    memory = Memory(cfg)
    yield memory, Graph(built.info["ids"])
    memory.close()


def prune(mem: Memory, **selectors: object) -> PruneReport:
    options = {k: selectors.pop(k) for k in ("dry_run", "vacuum") if k in selectors}
    return mem.prune(Selection(**selectors), now=NOW, **options)  # type: ignore[arg-type]


# --- the cascade ---------------------------------------------------------------------------


def test_session_prune_cascades_to_nodes_derived_only_from_it(
    graph_mem: tuple[Memory, Graph],
) -> None:
    mem, g = graph_mem
    report = prune(mem, sessions=("s1",))
    gone = {"e1", "e2", "e3", "g1", "f1", "r1", "c1", "n1", "n2"}
    assert remaining(mem.store) == g.public(*(ALL - gone))
    assert report.removed == {
        "episode": 3, "segment": 1, "fact": 1, "reflection": 1, "concept": 1, "entity": 2
    }  # fmt: skip
    # Survivors with other sources stay, minus the edges to what went.
    assert edge_set(mem.store, g) == {
        ("e4", "e5", "NEXT"), ("e4", "g2", "PART_OF"), ("e5", "g2", "PART_OF"),
        ("f2", "e4", "DERIVED_FROM"), ("f3", "e5", "DERIVED_FROM"), ("f4", "e4", "DERIVED_FROM"),
        ("f4", "f3", "SUPERSEDES"), ("r2", "f4", "DERIVED_FROM_FACT"),
        ("g2", "c2", "HAS_CONCEPT"), ("e4", "n3", "MENTIONS"),
    }  # fmt: skip
    assert report.edges == 27 - len(edge_set(mem.store, g))
    # Full-text rows, vectors and progress marks went with the nodes.
    assert mem.store.text_search("default", "Pistachio greyhound hiking", 10) == []
    assert set(mem.store.get_vectors(list(g.ids.values()))) == {g[n] for n in ALL - gone}
    assert mem.store.processed_among("facts", [g["e1"], g["e4"]]) == {g["e4"]}
    # a.jsonl has no episode left, so its row went; b.jsonl still has e4, e5 and e6.
    assert report.sources == ["a.jsonl"]
    assert [s["path"] for s in mem.store.sources("default")] == ["b.jsonl"]
    assert integrity(mem.store.path)["check"] == ["ok"]


def test_source_prune_keeps_an_episode_another_source_still_holds(
    graph_mem: tuple[Memory, Graph],
) -> None:
    mem, g = graph_mem
    report = prune(mem, sources=("a.jsonl",))
    assert report.kept_shared == 1
    assert report.removed == {"episode": 2, "fact": 1, "reflection": 1, "concept": 1, "entity": 2}
    # e3 survives (also in b.jsonl) and keeps g1 alive; only its link to a.jsonl went.
    assert remaining(mem.store) == g.public(*(ALL - {"e1", "e2", "f1", "r1", "c1", "n1", "n2"}))
    assert mem.store.source_paths(g["e3"]) == ["b.jsonl"]
    assert report.sources == ["a.jsonl"]
    # Forgetting b.jsonl too now takes e3 and everything else that was left.
    prune(mem, sources=("b.jsonl",))
    assert remaining(mem.store) == set()
    assert mem.store.sources("default") == []
    assert mem.store.count_edges("default") == {}


def test_both_sources_at_once_remove_the_shared_episode(graph_mem: tuple[Memory, Graph]) -> None:
    mem, _ = graph_mem
    report = prune(mem, sources=("a.jsonl", "b.jsonl"))
    assert report.kept_shared == 0 and report.total == len(ALL)
    assert remaining(mem.store) == set()


def test_a_derived_node_goes_alone_then_what_depended_only_on_it(
    graph_mem: tuple[Memory, Graph],
) -> None:
    mem, g = graph_mem
    report = prune(mem, nodes=(g.pid("f4"),))
    assert report.removed == {"fact": 1}
    assert remaining(mem.store) == g.public(*(ALL - {"f4"}))  # r2 still has f1
    prune(mem, nodes=(g.pid("f1"),))
    # r1 and r2 have no fact left; c1 is still held by e1's HAS_CONCEPT edge.
    assert remaining(mem.store) == g.public(*(ALL - {"f1", "f4", "r1", "r2"}))


def test_removing_an_episode_cascades_and_bridges_the_next_chain(
    graph_mem: tuple[Memory, Graph],
) -> None:
    mem, g = graph_mem
    prune(mem, nodes=(g.pid("e2"),))
    # n2 was mentioned only by e2; f2 still has e4; g1 still has e1 and e3.
    assert remaining(mem.store) == g.public(*(ALL - {"e2", "n2"}))
    assert ("e1", "e3", "NEXT") in edge_set(mem.store, g)
    assert ("f2", "e4", "DERIVED_FROM") in edge_set(mem.store, g)


def test_superseded_and_min_belief(graph_mem: tuple[Memory, Graph]) -> None:
    mem, g = graph_mem
    assert prune(mem, superseded=True, dry_run=True).removed == {"fact": 1}
    assert prune(mem, min_belief=0.5, dry_run=True).removed == {"fact": 1, "reflection": 1}
    assert prune(mem, superseded=True, min_belief=0.1, dry_run=True).removed == {}
    report = prune(mem, min_belief=0.5)
    assert remaining(mem.store) == g.public(*(ALL - {"f3", "r2"}))
    assert report.sources == []


def test_node_selectors_and_episode_selectors_combine_with_and(
    graph_mem: tuple[Memory, Graph],
) -> None:
    mem, g = graph_mem
    assert prune(mem, superseded=True, sessions=("s1",), dry_run=True).total == 0
    report = prune(mem, superseded=True, sessions=("s2",))
    assert report.removed == {"fact": 1}
    assert remaining(mem.store) == g.public(*(ALL - {"f3"}))
    # Episodes themselves only go when a node selector picks them.
    assert prune(mem, nodes=(g.pid("e4"),), sessions=("s1",), dry_run=True).total == 0


def test_orphans_are_swept_with_what_depends_on_them(graph_mem: tuple[Memory, Graph]) -> None:
    mem, g = graph_mem
    with mem.store.transaction():
        lost = mem.store.insert_node("default", "fact", "a fact whose episode vanished")
        refl = mem.store.insert_node("default", "reflection", "built on the lost fact")
        lonely = mem.store.insert_node("default", "concept", "lonely_concept")
        x = mem.store.insert_node("default", "entity", "X")
        y = mem.store.insert_node("default", "entity", "Y")
        mem.store.add_edges(
            "default", [Edge(refl, lost, "DERIVED_FROM_FACT"), Edge(x, y, "RELATION")]
        )
    report = prune(mem, orphans=True)
    assert report.removed == {"fact": 1, "reflection": 1, "concept": 1, "entity": 2}
    assert {e["node_id"] for e in report.examples} == {
        f"fa{lost}",
        f"rf{refl}",
        f"co{lonely}",
        f"en{x}",
        f"en{y}",
    }
    assert remaining(mem.store) == g.public(*ALL)


def test_time_selectors_use_episode_time_and_skip_undated_episodes(
    graph_mem: tuple[Memory, Graph],
) -> None:
    mem, g = graph_mem
    # NOW is 2024-06-01: s1 is ~4.7 months old, s2 under 2 weeks.
    assert prune(mem, older_than="4mo", dry_run=True).removed["episode"] == 3
    assert prune(mem, older_than="5mo", dry_run=True).total == 0
    assert prune(mem, older_than="1w", dry_run=True).removed["episode"] == 5
    # e4 is 18:00+02:00 = 16:00 UTC and e5 16:05 UTC; a --before without a zone is UTC.
    assert prune(mem, before="2024-05-20T16:03:00", dry_run=True).removed["episode"] == 4
    assert prune(mem, before="2024-05-20T15:59:00", dry_run=True).removed["episode"] == 3
    assert prune(mem, before="2024-05-20", dry_run=True).removed["episode"] == 3
    prune(mem, before="2030-01-01")
    assert remaining(mem.store) == g.public("e6")  # the undated turn (and nothing it fed)


def test_a_session_glob_and_the_whole_space(graph_mem: tuple[Memory, Graph]) -> None:
    mem, g = graph_mem
    build(mem.store, space="other")
    assert prune(mem, sessions=("s*",), dry_run=True).total == len(ALL)
    assert prune(mem, sessions=("s[12]",), dry_run=True).removed["episode"] == 5
    with mem.store.transaction():
        mem.store.run_start("other", "facts")
    other = Memory(dataclasses.replace(mem.cfg, space="other"), store=mem.store)
    done = other.prune(Selection(whole_space=True), now=NOW)
    assert done.total == len(ALL) and sorted(done.sources) == ["a.jsonl", "b.jsonl"]
    assert remaining(mem.store, "other") == set() and mem.store.last_runs("other") == []
    assert mem.store.sources("other") == []
    # The default space is untouched.
    assert remaining(mem.store) == g.public(*ALL)
    assert len(mem.store.sources("default")) == 2


def test_source_is_found_by_path_absolute_path_or_sha_prefix(
    graph_mem: tuple[Memory, Graph], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, _ = graph_mem
    sha_a = hashlib.sha256(b"a").hexdigest()
    monkeypatch.chdir(tmp_path)
    for spec in ("a.jsonl", str(tmp_path / "a.jsonl"), sha_a[:8], sha_a.upper()):
        assert prune(mem, sources=(spec,), dry_run=True).removed["episode"] == 2, spec
    for spec in ("c.jsonl", sha_a[:7]):
        with pytest.raises(NotFound) as info:
            prune(mem, sources=(spec,), dry_run=True)
        assert "a.jsonl" in info.value.message and "b.jsonl" in info.value.message
    with mem.store.transaction():
        mem.store.insert_source("default", "a.jsonl", "f" * 64, "jsonl", 0)
    with pytest.raises(NotFound, match="matches several sources"):
        prune(mem, sources=("a.jsonl",), dry_run=True)


def test_source_is_found_by_the_content_of_a_file_under_another_name(
    graph_mem: tuple[Memory, Graph], tmp_path: Path
) -> None:
    mem, _ = graph_mem
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_bytes(b"a")  # the bytes ingested as a.jsonl
    assert prune(mem, sources=(str(renamed),), dry_run=True).removed["episode"] == 2
    renamed.write_bytes(b"something else")
    with pytest.raises(NotFound, match="matches no source"):
        prune(mem, sources=(str(renamed),), dry_run=True)


@pytest.mark.parametrize(
    "selection",
    [
        Selection(),
        Selection(orphans=True, sessions=("s1",)),
        Selection(min_belief=1.5),
        Selection(older_than="6m"),
        Selection(older_than="0d"),
        Selection(older_than="thirty days"),
        Selection(older_than="100000y"),  # before year 1
        Selection(older_than="99999999999999999999999d"),
        Selection(before="next tuesday"),
        Selection(nodes=("pistachio",)),
    ],
)
def test_bad_selections_are_usage_errors(mem: Memory, selection: Selection) -> None:
    with pytest.raises(UsageError):
        mem.prune(selection)


def test_unknown_node_and_session_are_not_found(graph_mem: tuple[Memory, Graph]) -> None:
    mem, _ = graph_mem
    with pytest.raises(NodeNotFound):
        prune(mem, nodes=("fa999",))
    with pytest.raises(NotFound, match="s9"):
        prune(mem, sessions=("s9",))


@pytest.mark.parametrize(
    ("text", "days"),
    [("30d", 30), ("2w", 14), ("12h", 0.5), ("90min", 0.0625), (" 3d ", 3)],
)
def test_durations(text: str, days: float) -> None:
    delta = NOW - (NOW - parse_duration(text))
    assert delta.total_seconds() == days * 86400


def test_months_and_years_are_calendar_months_and_years() -> None:
    assert NOW - parse_duration("6mo") == datetime(2023, 12, 1, tzinfo=timezone.utc)
    assert NOW - parse_duration("1y") == datetime(2023, 6, 1, tzinfo=timezone.utc)


def test_dry_run_changes_nothing_and_a_real_run_empties_the_model_cache(
    graph_mem: tuple[Memory, Graph],
) -> None:
    mem, g = graph_mem
    mem.store.cache_put("k", "fake", "m", CachedReply('{"facts": ["Pistachio"]}', 1, 1))
    before = (remaining(mem.store), edge_set(mem.store, g))
    report = prune(mem, sessions=("s1",), dry_run=True)
    # The dry run reports what the real run below removes, cached replies included.
    assert report.dry_run and report.total == 9 and report.cache_entries == 1
    assert (remaining(mem.store), edge_set(mem.store, g)) == before
    assert mem.store.cache_get("k") is not None
    report = prune(mem, sessions=("s1",))
    assert report.cache_entries == 1 and mem.store.cache_get("k") is None
