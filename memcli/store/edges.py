"""Edges as both backends read them: the lean rows of graph reads, and which edge types lead
from a derived node back to the episodes it came from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

EdgeRow = tuple[int, int, str, float]

# Edges whose direction is derived -> origin, and those whose direction is origin -> derived.
TOWARDS_ORIGIN = ("DERIVED_FROM", "DERIVED_FROM_FACT")
FROM_ORIGIN = ("PART_OF", "HAS_CONCEPT", "MENTIONS")


def edge_row(row: Sequence[Any]) -> EdgeRow:
    """(src, dst, type, weight) of a selected edge, typed."""
    src, dst, typ, weight = row
    return (int(src), int(dst), typ, float(weight))
