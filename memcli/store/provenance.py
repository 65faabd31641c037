"""Walking provenance edges from derived nodes back to the episodes they came from."""

from __future__ import annotations

import json
from typing import Any

from memcli.models import node_public_id

# Edges whose direction is derived -> origin, and those whose direction is origin -> derived.
TOWARDS_ORIGIN = ("DERIVED_FROM", "DERIVED_FROM_FACT")
FROM_ORIGIN = ("PART_OF", "HAS_CONCEPT", "MENTIONS")

_WALK = f"""
WITH RECURSIVE walk(start, node) AS (
    SELECT value, value FROM json_each(?)
    UNION
    SELECT walk.start, e.dst FROM walk JOIN edges e ON e.src = walk.node
        WHERE e.type IN ({",".join(repr(t) for t in TOWARDS_ORIGIN)})
    UNION
    SELECT walk.start, e.src FROM walk JOIN edges e ON e.dst = walk.node
        WHERE e.type IN ({",".join(repr(t) for t in FROM_ORIGIN)})
)
SELECT walk.start, n.id, n.ref FROM walk JOIN nodes n ON n.id = walk.node
WHERE n.kind = 'episode' AND walk.start != walk.node
ORDER BY walk.start, n.id
"""


def source_episode_refs(conn: Any, node_ids: list[int]) -> dict[int, list[str]]:
    """For each node id, the refs (or public ids) of its source episodes, oldest first."""
    out: dict[int, list[str]] = {nid: [] for nid in node_ids}
    if not node_ids:
        return out
    for start, episode_id, ref in conn.execute(_WALK, (json.dumps(node_ids),)):
        out[start].append(ref or node_public_id("episode", episode_id))
    return out


# The topic segments a memory rests on: a turn's own (PART_OF), else those of the turns it
# was derived from, through any chain of DERIVED_FROM / DERIVED_FROM_FACT edges.
_TOPICS = f"""
WITH RECURSIVE walk(start, node) AS (
    SELECT value, value FROM json_each(?)
    UNION
    SELECT walk.start, e.dst FROM walk JOIN edges e ON e.src = walk.node
        WHERE e.type IN ({",".join(repr(t) for t in TOWARDS_ORIGIN)})
)
SELECT DISTINCT walk.start, e.dst FROM walk JOIN edges e ON e.src = walk.node
WHERE e.type = 'PART_OF'
"""


def topic_segments(conn: Any, node_ids: list[int]) -> dict[int, list[int]]:
    """For each node that rests on turns inside topic segments, those segments' ids."""
    out: dict[int, list[int]] = {}
    if node_ids:
        for start, segment in conn.execute(_TOPICS, (json.dumps(node_ids),)):
            out.setdefault(int(start), []).append(int(segment))
    return out
