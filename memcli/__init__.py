"""memcli: long-term memory for AI agents in one SQLite file.

The library the CLI and the MCP server stand on:

    from memcli import Memory

    with Memory.open("~/memory.db") as mem:
        mem.ingest("chat.jsonl")
        mem.add("The demo moved to Thursday 10:00", role="user")
        answer = mem.recall("When is the demo?")
        print(answer.context)
        for hit in answer.hits:
            print(hit.node.node_id, round(hit.score, 3), hit.node.text)

Names are imported on first use, so `import memcli` (and `memcli --help`) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.consolidate.reports import ConsolidateReport
    from memcli.errors import MemcliError
    from memcli.memory import Memory
    from memcli.models import AddReport, Answer, Hit, IngestReport, Node, PruneReport
    from memcli.ops.inspect import NodeView, StoreStats
    from memcli.ops.listing import ListQuery, MemoryPage
    from memcli.ops.prune import Selection
    from memcli.ops.reindex import ReindexReport
    from memcli.ops.transfer import ImportReport

# Public name -> the module that defines it.
_EXPORTS = {
    "Memory": "memcli.memory",
    "Selection": "memcli.ops.prune",
    "Config": "memcli.config",
    "MemcliError": "memcli.errors",
    "AddReport": "memcli.models",
    "Answer": "memcli.models",
    "Hit": "memcli.models",
    "IngestReport": "memcli.models",
    "Node": "memcli.models",
    "PruneReport": "memcli.models",
    "ConsolidateReport": "memcli.consolidate.reports",
    "NodeView": "memcli.ops.inspect",
    "StoreStats": "memcli.ops.inspect",
    "ReindexReport": "memcli.ops.reindex",
    "ListQuery": "memcli.ops.listing",
    "MemoryPage": "memcli.ops.listing",
    "ImportReport": "memcli.ops.transfer",
}

__all__ = [
    "AddReport",
    "Answer",
    "Config",
    "ConsolidateReport",
    "Hit",
    "ImportReport",
    "IngestReport",
    "ListQuery",
    "MemcliError",
    "Memory",
    "MemoryPage",
    "Node",
    "NodeView",
    "PruneReport",
    "ReindexReport",
    "Selection",
    "StoreStats",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its module the first time it is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memcli' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
