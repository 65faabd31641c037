"""What an export carries in either backend: the columns a dump leaves out, and a dump's
values as a store holds them."""

from __future__ import annotations

import json
from typing import Any

# Columns that belong to the store, not to a node or edge: where it lives, the edge's row id.
NOT_EXPORTED = {"nodes": ("space",), "edges": ("space", "id")}


def stored_value(column: str, value: Any) -> Any:
    """A dump value as stored: props (and any other JSON object or list) as JSON text."""
    if column == "props" and value is None:
        value = {}
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
