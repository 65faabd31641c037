"""Node rows as both backends read them: the columns selected, and a row made a Node."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memcli.models import Node

# The columns a new node may set besides its space, kind and text.
NODE_FIELDS = ("speaker", "session", "seq", "timestamp", "ref", "belief", "status", "key")
# What a node read selects, in the order `row_to_node` reads it.
NODE_COLUMNS = (
    "id, kind, space, text, speaker, session, seq, timestamp, ref, belief, status, props,"
    " created_at"
)


def row_to_node(row: Sequence[Any]) -> Node:
    """Build a Node from a row selected with NODE_COLUMNS."""
    return Node(
        id=row[0],
        kind=row[1],
        space=row[2],
        text=row[3],
        speaker=row[4],
        session=row[5],
        seq=row[6],
        timestamp=row[7],
        ref=row[8],
        belief=row[9],
        status=row[10],
        props=json.loads(row[11]) if row[11] else {},
        created_at=row[12],
    )
