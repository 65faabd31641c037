"""GAM's deterministic reranking cues: time, role, confidence and standing rules.

Each cue fires (multiplies a memory's score by its β) or not:
- time: the question asks about time and the memory carries one of its own (a resolved
  relative expression, a valid_from date, or a month, year, weekday or date in its text);
- role: a person the question names is the memory's speaker (or, for a memory without a
  speaker, named in its text). In a conversation with an assistant, "I"/"my" in the
  question name the user and "did you …"/"you said" name the assistant;
- confidence: a derived memory (fact, reflection) believed at least `min_belief`;
- rule: in a conversation with an assistant, a user's message that states a standing
  instruction or preference ("always …", "never …", "from now on …", "I prefer …"): an
  answer has to follow it whatever the question is about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from memcli.models import Node
from memcli.text import name_words

# Questions that ask about time: when, what date/year, how long ago, before or after what.
_TEMPORAL_QUESTION = re.compile(
    r"\b(when|what (?:date|day|year|month|time|week)|which (?:date|day|year|month|week)|"
    r"how long|how many (?:days|weeks|months|years)|since when|until when|what age)\b",
    re.IGNORECASE,
)
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
# Absolute time in a memory's own words: a month name, a year, a weekday or a numeric date.
_TIME_IN_TEXT = re.compile(
    rf"\b({_MONTHS}|(?:19|20)\d\d|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"\d{1,2}/\d{1,2}(?:/\d{2,4})?)\b",
    re.IGNORECASE,
)
# A standing instruction or preference, in the user's words.
_RULE = re.compile(
    r"\b(always|never|from now on|going forward|make sure (?:to|you)|remember to|"
    r"i(?: would|'d)? prefer|i(?: would|'d) rather|my preference|"
    r"i(?: would|'d)? (?:like|want) you to|i (?:don't|do not) (?:like|want))\b",
    re.IGNORECASE,
)
# Chat roles of the AI side, and of everything that is not the user.
ASSISTANT_ROLES = frozenset({"assistant", "model"})
NOT_USER_ROLES = ASSISTANT_ROLES | {"system", "tool", "function", "developer"}
_SELF = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.IGNORECASE)
_ASSISTANT_DID = re.compile(
    r"\b(?:did|have|had) you\b|\byou (?:said|suggested|recommended|mentioned|told|explained|"
    r"proposed|advised|gave|showed|helped)\b|\byour (?:advice|suggestions?|recommendations?|"
    r"answers?|explanations?)\b",
    re.IGNORECASE,
)


def is_temporal(question: str) -> bool:
    """Whether the question asks when something happened or how long it took."""
    return _TEMPORAL_QUESTION.search(question) is not None


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


def pronoun_roles(question: str, speakers: Iterable[str]) -> set[str]:
    """The speakers a question names by pronoun, in a conversation with an assistant: the
    user's roles for "I"/"my", the assistant's for "did you"/"you said"."""
    known = {s.lower() for s in speakers}
    if not known & ASSISTANT_ROLES:
        return set()
    named: set[str] = set()
    if _SELF.search(question):
        named |= known - NOT_USER_ROLES
    if _ASSISTANT_DID.search(question):
        named |= known & ASSISTANT_ROLES
    return named


def user_roles(speakers: Iterable[str]) -> set[str]:
    """The user's speaker names in a conversation with an assistant (else none)."""
    known = {s.lower() for s in speakers}
    return known - NOT_USER_ROLES if known & ASSISTANT_ROLES else set()


def states_rule(node: Node, users: frozenset[str]) -> bool:
    """Whether a memory is a user's message stating a standing instruction or preference."""
    if not node.speaker:
        return False
    return node.speaker.lower() in users and bool(_RULE.search(node.text))


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
    users: frozenset[str] = frozenset()
    beta_time: float = 1.0
    beta_role: float = 1.0
    beta_conf: float = 1.0
    min_belief: float = 1.0
    beta_rule: float = 1.0

    @classmethod
    def of(cls, question: str, nodes: Iterable[Node], **betas: float) -> Cues:
        """The question's cues; the people it may name are the speakers of `nodes` and
        the entities among them."""
        named = {n.speaker if n.kind != "entity" else n.text for n in nodes}
        known = sorted(name for name in named if name is not None)
        people = named_people(question, known) | pronoun_roles(question, known)
        users = frozenset(user_roles(known))
        return cls(is_temporal(question), frozenset(people), users, **betas)

    def factor(self, node: Node) -> float:
        """The product of the βs of the cues that fire for this memory."""
        factor = 1.0
        if self.temporal and time_bearing(node):
            factor *= self.beta_time
        if role_match(node, set(self.people)):
            factor *= self.beta_role
        if node.kind != "episode" and (node.belief or 0.0) >= self.min_belief:
            factor *= self.beta_conf
        if self.users and states_rule(node, self.users):
            factor *= self.beta_rule
        return factor

    def fired(self, node: Node) -> dict[str, float]:
        """The cues that fire for this memory, by name, with their β (as `factor` takes
        them; for explanations)."""
        fired = {
            "time": self.temporal and time_bearing(node),
            "role": role_match(node, set(self.people)),
            "confidence": node.kind != "episode" and (node.belief or 0.0) >= self.min_belief,
            "rule": bool(self.users) and states_rule(node, self.users),
        }
        betas = {"time": self.beta_time, "role": self.beta_role, "confidence": self.beta_conf}
        betas["rule"] = self.beta_rule
        return {name: betas[name] for name, on in fired.items() if on and betas[name] != 1.0}

    def ceiling(self) -> float:
        """The largest factor any memory can get for this question."""
        factor = max(self.beta_conf, 1.0)
        if self.temporal:
            factor *= max(self.beta_time, 1.0)
        if self.people:
            factor *= max(self.beta_role, 1.0)
        if self.users:
            factor *= max(self.beta_rule, 1.0)
        return factor
