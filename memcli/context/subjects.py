"""What ranked memories are about, read from the store for packing (memcli.context.about).

A memory is about the named things it mentions: the entities its MENTIONS edges lead to
(made by the `entities` consolidation stage, with or without an LLM), except that a turn
naming one of the conversation's participants (a speaker, or the start of a speaker's
name) is not about them: chat mostly names the other person to address them ("Thanks,
Ana!"). A turn is about its speaker when the question names that speaker: "where does Ana
live?" is answered by what Ana said of herself (and by the facts that name her). Names
are compared by their canonical key (memcli.consolidate.names: case, accents and
possessives aside), so an entity and a speaker of the same name are one subject.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memcli.models import Hit, Node
from memcli.text import canonical_key

if TYPE_CHECKING:
    from memcli.store import Store

SHORT_FORM = 3  # letters of a speaker's name that make a short form of it


@dataclass
class Subjects:
    """Subject keys with their shown names, the memories about each, and those the
    question names."""

    names: dict[str, str] = field(default_factory=dict)  # key -> name as shown
    about: dict[int, list[str]] = field(default_factory=dict)  # node id -> subject keys
    asked: set[str] = field(default_factory=set)  # keys the question names
    # keys of the conversation's participants: the speakers of the turns and their short
    # forms ("Sam" for "Samira"), which chat mostly says to address someone
    participants: set[str] = field(default_factory=set)

    def add(self, node_id: int, key: str, name: str) -> None:
        """Record that memory `node_id` is about the subject `key` (shown as `name`)."""
        self.names.setdefault(key, name)
        keys = self.about.setdefault(node_id, [])
        if key not in keys:
            keys.append(key)


def _named_in(question: str) -> str:
    """The question's words as canonical keys, space-padded for whole-word lookups."""
    spaced = question.replace("'", " ' ").replace("\u2019", " \u2019 ")
    return f" {canonical_key(spaced)} "


def _keys(node: Node) -> set[str]:
    """The canonical keys of an entity's name and aliases."""
    names = [node.text, *(str(a) for a in node.props.get("aliases", []))]
    return {key for key in map(canonical_key, names) if key}


def subjects_of(store: Store, hits: Sequence[Hit], question: str) -> Subjects:
    """The subjects of the memories among `hits` (entities are not memories about
    themselves), and which of them the question names."""
    memories = {h.node.id for h in hits if h.node.kind != "entity"}
    said = _named_in(question)
    out = Subjects()
    rows = [r for r in store.edge_rows(list(memories), ["MENTIONS"]) if r[0] in memories]
    entities = store.nodes_by_ids({dst for _, dst, _, _ in rows}) if rows else {}
    keys: dict[int, str] = {}
    for node in entities.values():
        keys[node.id] = canonical_key(node.text)
        if any(f" {key} " in said for key in _keys(node)):
            out.asked.add(keys[node.id])
    speakers = _speaker_keys(hits)
    names = set(speakers.values())
    for src, dst, _, _ in rows:
        key = keys.get(dst)
        if key and not (src in speakers and _participant(key, names)):
            out.add(src, key, entities[dst].text)
    for hit in hits:
        key = speakers.get(hit.node.id, "")
        if key and f" {key} " in said:
            out.asked.add(key)
            out.add(hit.node.id, key, hit.node.speaker or key)
    out.participants = {key for key in out.names if _participant(key, names)}
    return out


def _speaker_keys(hits: Sequence[Hit]) -> dict[int, str]:
    """Turn id -> the canonical key of its speaker."""
    keys = {
        h.node.id: canonical_key(h.node.speaker or "") for h in hits if h.node.kind == "episode"
    }
    return {i: key for i, key in keys.items() if key}


def _participant(key: str, speakers: set[str]) -> bool:
    """Whether a name is a speaker's, or the start of one (at least SHORT_FORM letters)."""
    first = {sp.split()[0] for sp in speakers}
    return key in speakers or (len(key) >= SHORT_FORM and any(f.startswith(key) for f in first))
