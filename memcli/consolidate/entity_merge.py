"""Merging new entities into the entities they duplicate (see `entity_index` for the rules).

The entity with more edges survives (the older one on a tie); the other's edges move onto
it, its name and aliases become aliases, and it is deleted, all in one transaction per
merge. New entities that survive are marked processed, so each is compared once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memcli.consolidate.entity_index import EntityIndex, EntityRecord, rule_twins, vector_twins
from memcli.consolidate.fold import fold_node

if TYPE_CHECKING:
    from memcli.consolidate.stage import Stage
    from memcli.store import Store


def _pairs(stage: Stage, records: list[EntityRecord], fresh: set[int]) -> list[tuple[int, int]]:
    """Twin pairs with at least one new entity, rules first, each pair once."""
    job = stage.job
    vectors = job.store.get_vectors([r.id for r in records])
    found = rule_twins(records)
    found += vector_twins(records, vectors, job.cfg.entity_merge_threshold)
    seen: set[frozenset[int]] = set()
    out = []
    for a, b in found:
        pair = frozenset((a, b))
        if a != b and pair not in seen and (a in fresh or b in fresh):
            seen.add(pair)
            out.append((a, b))
    return out


def merge_new(stage: Stage) -> int:
    """Merge the new entities into their twins; return how many entities were merged away."""
    job = stage.job
    store = job.store
    fresh = set(store.unprocessed(job.space, "entities", kind="entity"))
    if not fresh:
        return 0
    index = job.entities
    gone: set[int] = set()
    for a, b in _pairs(stage, list(index.records.values()), fresh):
        if a in gone or b in gone:
            continue
        keep, drop = _survivor(store, a, b)
        _merge(stage, index, keep, drop)
        gone.add(drop)
    with store.transaction():
        store.mark_processed(job.space, "entities", sorted(fresh - gone))
    return len(gone)


def _survivor(store: Store, a: int, b: int) -> tuple[int, int]:
    degree = store.degrees([a, b])
    keep = max((a, b), key=lambda n: (degree[n], -n))
    return keep, b if keep == a else a


def _merge(stage: Stage, index: EntityIndex, keep: int, drop: int) -> None:
    """Move the dropped entity's edges onto the kept one and delete it."""
    aliases = fold_node(stage, keep, drop)
    record = index.records.pop(drop)
    for key, node in list(index.by_key.items()):
        if node == drop:
            index.by_key[key] = keep
    index.records[keep].aliases = aliases
    index.by_key.setdefault(record.key, keep)


def refresh_profiles(stage: Stage, entity_ids: list[int]) -> None:
    """Re-embed entities as their profile (see `profile_vectors`)."""
    job = stage.job
    if not entity_ids or job.ctx.load_embedder() is None:
        return
    rows = profile_vectors(job.store, lambda texts: job.embed(texts) or [], entity_ids)
    with job.store.transaction():
        job.save_vectors(rows)


def profile_vectors(
    store: Store, embed: Callable[[list[str]], Sequence[Any]], entity_ids: Sequence[int]
) -> list[tuple[int, str, Any]]:
    """(id, "entity", vector) of entities embedded as their name (or description) plus what
    their mentions say: the mean vector of the memories mentioning them, so a question about
    a kind of thing reaches the names said in such contexts. Consolidation, `reindex` and
    `import` all make an entity's vector this way, from the vectors already stored."""
    from memcli.consolidate.entity_llm import described
    from memcli.consolidate.nearest import mean_vector

    nodes = store.nodes_by_ids(entity_ids)
    texts = {i: described(n.text, str(n.props.get("description") or "")) for i, n in nodes.items()}
    own = dict(zip(texts, embed(list(texts.values())), strict=True))
    rows = []
    for eid in nodes:
        sources = [e.src for e in store.edges_of([eid], ["MENTIONS"]) if e.dst == eid]
        context = mean_vector(list(store.get_vectors(sources).values()))
        rows.append(
            (eid, "entity", own[eid] if context is None else mean_vector([own[eid], context]))
        )
    return rows
