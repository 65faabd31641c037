"""The space's concepts by canonical label and alias, and concept ids for new labels.

Every label goes through `normalize.canonical_tokens` before it is looked up or stored,
so plural/singular and spelling twins share one node from the start; labels that are
generic words or person names are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memcli.consolidate.normalize import canonical_tokens
from memcli.consolidate.phrases import is_generic

if TYPE_CHECKING:
    from memcli.store import Store

MAX_LABEL_WORDS = 5


class ConceptIndex:
    """The space's concepts by canonical label and by alias."""

    def __init__(
        self,
        store: Store,
        space: str,
        names: frozenset[str],
        generic: frozenset[tuple[str, ...]] = frozenset(),
    ) -> None:
        self.names = names
        self.generic = generic  # the space's generic phrases (`Corpus.generic`)
        self.by_label: dict[str, int] = {}
        for node in store.iter_nodes(space, "concept"):
            self.by_label[node.text] = node.id
            for alias in node.props.get("aliases", []):
                self.by_label.setdefault(alias, node.id)

    def label(self, raw: str) -> str | None:
        """The canonical label for a proposed one, or None when it is unusable."""
        tokens = [t for t in canonical_tokens(raw) if t not in self.names]
        if not tokens or len(tokens) > MAX_LABEL_WORDS or all(t.isdigit() for t in tokens):
            return None
        if is_generic(tuple(tokens), self.generic):
            return None
        return "_".join(tokens)

    def lookup(self, label: str) -> int | None:
        """The concept stored under a canonical label or alias."""
        return self.by_label.get(label)

    def create(self, store: Store, space: str, label: str, source: str) -> int:
        """Insert a concept node (call inside a transaction) and index it."""
        cid = store.insert_node(
            space, "concept", label, key=label, props={"source": source, "aliases": []}
        )
        self.by_label[label] = cid
        return cid
