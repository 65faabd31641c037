"""GAM's deterministic cues, read off a memory: time, role and confidence.

Each cue fires (multiplies a memory's score by its β, in `gam` and the traversals; is a
0/1 signal in `hybrid`) or not:
- time: the question asks about time (memcli.retrieval.shapes) and the memory carries one
  of its own (a resolved relative expression, a valid_from date, or a month, year,
  weekday or date in its text);
- role: a person the question names is the memory's speaker (or, for a memory without a
  speaker, named in its text); in a conversation with an assistant, the question's
  pronouns name the user or the assistant (memcli.retrieval.shapes);
- confidence: a derived memory (fact, reflection) believed at least `min_belief`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from memcli.models import Node
from memcli.retrieval.shapes import is_temporal, pronoun_roles
from memcli.text import name_words

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
# Absolute time in a memory's own words: a month name, a year, a weekday or a numeric date.
_TIME_IN_TEXT = re.compile(
    rf"\b({_MONTHS}|(?:19|20)\d\d|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"\d{1,2}/\d{1,2}(?:/\d{2,4})?)\b",
    re.IGNORECASE,
)


def time_bearing(node: Node) -> bool:
    """Whether a memory carries its own time: resolved expressions, a date, a valid_from."""
    if node.props.get("time_refs") or node.props.get("valid_from"):
        return True
    return _names_time(node.text)


@lru_cache(maxsize=1 << 16)
def _names_time(text: str) -> bool:
    # Memoised: a warm process weighs the same memories' texts again and again.
    return _TIME_IN_TEXT.search(text) is not None


def named_people(question: str, names: Iterable[str]) -> set[str]:
    """Known speakers or entities the question names, by full name or first name."""
    # A possessive names its owner: "Ana's flat", "James' car".
    words = [w.lower().removesuffix("'s").rstrip("'") for w in name_words(question)]
    text = " " + " ".join(words) + " "
    found = set()
    for name in names:
        parts = [w.lower() for w in name_words(name)]
        if parts and (f" {' '.join(parts)} " in text or parts[0] in words):
            found.add(name.lower())
    return found


def role_match(node: Node, people: set[str]) -> bool:
    """Whether a memory belongs to a person the question names."""
    if not people:
        return False
    if node.speaker:
        return node.speaker.lower() in people
    words = " " + " ".join(w.lower() for w in name_words(node.text)) + " "
    return any(f" {person} " in words for person in people)


@dataclass(frozen=True)
class Cues:
    """The cues of one question, ready to weigh memories (a β of 1 turns a cue off)."""

    temporal: bool
    people: frozenset[str]
    beta_time: float = 1.0
    beta_role: float = 1.0
    beta_conf: float = 1.0
    min_belief: float = 1.0

    @classmethod
    def of(cls, question: str, nodes: Iterable[Node], **betas: float) -> Cues:
        """The question's cues; the people it may name are the speakers of `nodes` and
        the entities among them."""
        named = {n.speaker if n.kind != "entity" else n.text for n in nodes}
        known = sorted(name for name in named if name is not None)
        people = named_people(question, known) | pronoun_roles(question, known)
        return cls(is_temporal(question), frozenset(people), **betas)

    def naming(self, people: Iterable[str]) -> Cues:
        """These cues with more people named (lower case speaker names)."""
        return dataclasses.replace(self, people=self.people | frozenset(people))

    def factor(self, node: Node) -> float:
        """The product of the βs of the cues that fire for this memory."""
        factor = 1.0
        if self.temporal and time_bearing(node):
            factor *= self.beta_time
        if role_match(node, set(self.people)):
            factor *= self.beta_role
        if node.kind != "episode" and (node.belief or 0.0) >= self.min_belief:
            factor *= self.beta_conf
        return factor
