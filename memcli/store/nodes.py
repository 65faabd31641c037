"""Node rows as both backends read and write them: the columns selected, a row made a Node,
and one node inserted as a batch of one."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

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


class OneNode:
    """`insert_node` over the backend's `insert_nodes`."""

    if TYPE_CHECKING:

        def insert_nodes(
            self, space: str, kind: str, rows: Sequence[Mapping[str, Any]]
        ) -> list[int]: ...

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
        row = {
            "text": text,
            "speaker": speaker,
            "session": session,
            "seq": seq,
            "timestamp": timestamp,
            "ref": ref,
            "belief": belief,
            "status": status,
            "key": key,
            "props": props,
        }
        return self.insert_nodes(space, kind, [row])[0]
