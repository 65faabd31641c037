"""Folding a twin into the node kept, as concepts and entities both merge their twins: the
twin's edges move over, its names become aliases, and it is deleted."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.models import Edge

if TYPE_CHECKING:
    from memcli.consolidate.stage import Stage


def fold_node(stage: Stage, keep: int, drop: int, stage_mark: str | None = None) -> list[str]:
    """Move a twin's edges onto the node kept, delete the twin and keep its names as the
    kept node's aliases (one transaction; marked processed for `stage_mark` when given).
    Returns the kept node's aliases."""
    job = stage.job
    store = job.store
    nodes = store.nodes_by_ids([keep, drop])
    kept, dropped = nodes[keep], nodes[drop]
    rewired = []
    for e in store.edges_of([drop]):
        src = keep if e.src == drop else e.src
        dst = keep if e.dst == drop else e.dst
        if src != dst:
            rewired.append(Edge(src, dst, e.type, e.weight, e.props))
    names = {*kept.props.get("aliases", []), dropped.text, *dropped.props.get("aliases", [])}
    aliases = sorted(names - {kept.text})
    with store.transaction():
        stage.report.edges += store.add_edges(job.space, rewired)
        store.delete_nodes([drop])
        store.update_node(keep, props={**kept.props, "aliases": aliases})
        if stage_mark:
            store.mark_processed(job.space, stage_mark, [keep])
    return aliases
