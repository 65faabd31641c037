"""Walking provenance edges from derived nodes back to the episodes they came from."""

from __future__ import annotations

import json
from typing import Any

from memcli.models import node_public_id
from memcli.store.edges import FROM_ORIGIN, TOWARDS_ORIGIN
from memcli.store.sqlite import sql

_WALK = sql.provenance_walk(TOWARDS_ORIGIN, FROM_ORIGIN)
_TOPICS = sql.topic_walk(TOWARDS_ORIGIN)


def source_episodes(conn: Any, node_ids: list[int]) -> dict[int, list[tuple[str, str | None]]]:
    """For each node id, (public id, ref) of its source episodes, oldest first."""
    out: dict[int, list[tuple[str, str | None]]] = {nid: [] for nid in node_ids}
    if node_ids:
        for start, episode_id, ref in conn.execute(_WALK, (json.dumps(node_ids),)):
            out[start].append((node_public_id("episode", episode_id), ref))
    return out


def source_episode_refs(conn: Any, node_ids: list[int]) -> dict[int, list[str]]:
    """For each node id, the refs (or public ids) of its source episodes, oldest first."""
    found = source_episodes(conn, node_ids)
    return {nid: [ref or public for public, ref in pairs] for nid, pairs in found.items()}


def topic_segments(conn: Any, node_ids: list[int]) -> dict[int, list[int]]:
    """For each node that rests on turns inside topic segments, those segments' ids."""
    out: dict[int, list[int]] = {}
    if node_ids:
        for start, segment in conn.execute(_TOPICS, (json.dumps(node_ids),)):
            out.setdefault(int(start), []).append(int(segment))
    return out
