"""The space's entities by canonical key and alias, and the rules that merge name variants.

A name is looked up by its canonical key (`names.canonical_key`: case, accents, possessive,
inner punctuation aside, so `Vue.js`, `VueJS` and `vuejs` are one key). Variants that
keep different keys are merged when they are
- plural twins: one key is the other plus a final "s" (`Raptor` / `Raptors`);
- an acronym and the name it abbreviates, both seen in the space (`TLS` /
  `Transport Layer Security`);
- a one-word name and the only longer name of the space that starts or ends with it
  (`Ada` / `Ada Lovelace`), for words of at least MIN_PART_CHARS letters;
- names whose embeddings are at least `entity_merge_threshold` similar and which share most
  of their letters (MiniLM puts unrelated short names close; the letters keep them apart).
The name kept is the one mentioned more often; the other becomes an alias.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memcli.text import canonical_key

if TYPE_CHECKING:
    from memcli.store import Store

MIN_PART_CHARS = 4
MIN_SHARED_LETTERS = 0.6  # trigram overlap two names need before their vectors are compared


@dataclass
class EntityRecord:
    """What the index knows of one stored entity."""

    id: int
    key: str
    name: str
    kind: str
    aliases: list[str] = field(default_factory=list)


class EntityIndex:
    """The space's entities by canonical key and by the keys of their aliases."""

    def __init__(self, store: Store, space: str) -> None:
        self.by_key: dict[str, int] = {}
        self.records: dict[int, EntityRecord] = {}
        for node in store.iter_nodes(space, "entity"):
            aliases = [str(a) for a in node.props.get("aliases", [])]
            kind = str(node.props.get("type") or "name")
            self.add(EntityRecord(node.id, canonical_key(node.text), node.text, kind,
                                  aliases))  # fmt: skip

    def add(self, record: EntityRecord) -> None:
        """Index a stored entity under its key and its aliases' keys."""
        self.records[record.id] = record
        self.by_key[record.key] = record.id
        for alias in record.aliases:
            self.by_key.setdefault(canonical_key(alias), record.id)

    def lookup(self, surface: str) -> int | None:
        """The entity a name (as written) refers to, or None."""
        key = canonical_key(surface)
        if not key:
            return None
        found = self.by_key.get(key)
        if found is None and key.endswith("s") and len(key) > MIN_PART_CHARS:
            found = self.by_key.get(key[:-1])
        if found is None:
            found = self.by_key.get(key + "s")
        return found

    def keys_in(self, text: str) -> dict[int, str]:
        """Entities whose key or alias key occurs in a text as whole words: id -> key."""
        words = canonical_key(text.replace("'", " ' ")).split()
        padded = " " + " ".join(words) + " "
        found: dict[int, str] = {}
        for key, node in self.by_key.items():
            if key and f" {key} " in padded and node not in found:
                found[node] = key
        return found


def acronym_of(name: str) -> str:
    """The initials of a multi-word name, lower-cased ('' for one word)."""
    words = [w for w in name.replace("-", " ").split() if w[:1].isalnum()]
    return "".join(w[0] for w in words).casefold() if len(words) > 1 else ""


def _trigrams(text: str) -> set[str]:
    padded = f"  {text} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def letters_shared(a: str, b: str) -> float:
    """Trigram overlap of two keys: 1.0 for the same letters, 0 for nothing in common."""
    ta, tb = _trigrams(a), _trigrams(b)
    return len(ta & tb) / max(1, min(len(ta), len(tb)))


def rule_twins(records: Sequence[EntityRecord]) -> list[tuple[int, int]]:
    """(a, b) pairs of entities that name the same thing by the string rules above."""
    by_key = {r.key: r.id for r in records}
    pairs: list[tuple[int, int]] = []
    for r in records:
        if r.key.endswith("s") and r.key[:-1] in by_key and len(r.key) > MIN_PART_CHARS:
            pairs.append((r.id, by_key[r.key[:-1]]))
        short = acronym_of(r.name)
        if len(short) >= 2 and short in by_key and by_key[short] != r.id:
            pairs.append((by_key[short], r.id))
    pairs.extend(_part_twins(records))
    return pairs


def _part_twins(records: Sequence[EntityRecord]) -> Iterable[tuple[int, int]]:
    """A one-word name and the only longer name that starts or ends with it."""
    longer: dict[str, list[int]] = {}
    for r in records:
        words = r.key.split()
        if len(words) > 1:
            for part in {words[0], words[-1]}:
                longer.setdefault(part, []).append(r.id)
    for r in records:
        if " " in r.key or len(r.key) < MIN_PART_CHARS or r.kind not in ("name", "title"):
            continue
        owners = longer.get(r.key, [])
        if len(owners) == 1:
            yield r.id, owners[0]


def vector_twins(
    records: Sequence[EntityRecord], vectors: dict[int, Any], threshold: float
) -> list[tuple[int, int]]:
    """Pairs of entities whose names embed at least `threshold` alike and share letters."""
    import numpy as np

    have = [r for r in records if r.id in vectors]
    if len(have) < 2:
        return []
    matrix = np.stack([vectors[r.id] for r in have])
    sims = matrix @ matrix.T
    pairs = []
    for i, j in zip(*np.nonzero(np.triu(sims, k=1) >= threshold), strict=True):
        a, b = have[int(i)], have[int(j)]
        if letters_shared(a.key, b.key) >= MIN_SHARED_LETTERS:
            pairs.append((a.id, b.id))
    return pairs
