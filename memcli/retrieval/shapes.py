"""What the wording of a question says, read from its form alone (never from its topic).

Every English pattern a strategy reads off a question is here, with what it does:

- temporal: it asks when or how long (the time cue of `gam` and the traversals,
  memcli.retrieval.cues);
- pronouns: in a conversation with an assistant, "I"/"my" name the user's messages and
  "did you …"/"you said" the assistant's (the role signal of memcli.retrieval.signals,
  the role cue of `gam` and the traversals).

- broad: it asks for many memories at once: an order or a progression ("in what order",
  "how did … progress/evolve"), a summary ("summarise", "overview", "everything about"),
  or an aggregate over the conversation ("how many … in total", "across my sessions");
- ordered: among broad questions, one about order or progression (the answer follows
  the timeline);
- summary: among broad questions, one asking for a summary: it is about what was said on
  both sides of the conversation, whoever the question's pronouns name.

`topic` is the question without the words that describe the requested form of the answer
("(mention 5 items)", "in order", "summary of", "our conversations"): what remains says
what the memories must be about, which is what search should match.

`parts` are the items of an enumeration the question asks about together ("for the
catering, the deposit, and the portrait"): each item is usually answered by a memory of
its own, which a search for the whole question ranks below the memories matching the
most items. An enumeration is three or more comma-separated pieces with "and"/"or" before
the last ("A, B, and C" or "A, B and C"); each piece, with the words around the list
attached to the first and the last, is one part. Questions asking for an order or a
summary have none: they are spread over the sessions instead.

Each rule `hybrid` applies is a named step with a switch in ShapeParams (`shape_broad`,
`shape_ordered`, `shape_summary`, `shape_aggregate`, `shape_parts`, `shape_pronouns`;
set under `retrieval.tuning.hybrid`): a rule switched off never matches, so it neither
makes a question broad nor trims its topic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Questions that ask about time: when, what date/year, how long ago, before or after what.
_TEMPORAL_QUESTION = re.compile(
    r"\b(when|what (?:date|day|year|month|time|week)|which (?:date|day|year|month|week)|"
    r"how long|how many (?:days|weeks|months|years)|since when|until when|what age)\b",
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


_ORDER = re.compile(
    r"\b(in (?:what|which|the) order|order in which|in order(?! to\b)|chronolog\w*|"
    r"sequence|timeline|progress(?:ed|ion)?|evolv(?:e|ed|ing)|develop(?:ed)? over time)\b",
    re.IGNORECASE,
)
_SUMMARY = re.compile(
    r"\b(summar(?:y|ies|i[sz]e|i[sz]ed|i[sz]ing)|overview|recap|everything|full scope|"
    r"all (?:the|of) (?:\w+ )?(?:things|ways|steps|aspects|topics))\b",
    re.IGNORECASE,
)
_AGGREGATE = re.compile(
    r"\b(in total|total|combined|altogether|across (?:all|my|our)|throughout|over time)\b",
    re.IGNORECASE,
)
# Words about the answer's form rather than its content: a parenthesis asking for a form,
# polite request phrases, and phrases naming the conversation itself.
_FORM_REQUEST = re.compile(r"\([^)]*\)")
_META = re.compile(
    r"\b((?:throughout|across|in|during|from) (?:all )?(?:of )?(?:our|my|the|these) (?:recent )?"
    r"(?:conversations?|discussions?|chats?|sessions?|talks?)|"
    r"(?:can|could|would) you|please|give me|tell me|list|mention(?:ed)?|brought up|"
    r"bring up|walk me through|conversations?|discussions?|items?|aspects?|topics?|"
    r"different|various|detailed|thorough|cohesive)\b",
    re.IGNORECASE,
)


_JOIN = re.compile(r"^\s*(?:and|or)\s+", re.IGNORECASE)
_LAST_JOIN = re.compile(r"\s+(?:and|or)\s+", re.IGNORECASE)


def _parts(text: str) -> tuple[str, ...]:
    """The pieces of an enumeration of three or more items in `text`; () without one."""
    pieces = [p.strip() for p in text.split(",")]
    if len(pieces) < 2:
        return ()
    joined = [i for i, p in enumerate(pieces) if i > 0 and _JOIN.match(p)]
    if joined:
        pieces = [_JOIN.sub("", p) for p in pieces]
    else:  # "A, B and C": the conjunction sits inside the last piece
        head, *tail = _LAST_JOIN.split(pieces[-1], maxsplit=1)
        if not tail:
            return ()
        pieces[-1:] = [head, tail[0]]
    pieces = [p.strip(" ?.!;:") for p in pieces]
    pieces = [p for p in pieces if re.search(r"\w", p)]
    return tuple(pieces) if len(pieces) >= 3 else ()


def _topic(question: str, forms: Iterable[re.Pattern[str]]) -> str:
    """The question without the words that ask for a form of answer (`forms`: the order and
    summary rules, a pattern that never matches for one switched off)."""
    text = _FORM_REQUEST.sub(" ", question)
    for pattern in (*forms, _META):
        text = pattern.sub(" ", text)
    return re.sub(r"\s+", " ", text).strip(" ,.?") or question


_NEVER = re.compile(r"(?!)")  # the pattern of a rule switched off: it matches nothing


@dataclass(frozen=True)
class ShapeParams:
    """The question-shape rules of `hybrid`, a switch each (part of its parameters,
    memcli.retrieval.params.HybridParams; false: the rule never matches)."""

    shape_broad: bool = True  # any question broad at all (off: the three rules below)
    shape_ordered: bool = True  # an order or a progression makes it broad, spread over sessions
    shape_summary: bool = True  # a summary makes it broad, spread, both sides of a chat alike
    shape_aggregate: bool = True  # a total over the conversation makes it broad
    shape_parts: bool = True  # an enumeration is also searched item by item
    shape_pronouns: bool = True  # "I"/"my", "did you" name the user, the assistant (role signal)


@dataclass(frozen=True)
class Shape:
    """What the form of a question says about the memories that answer it."""

    broad: bool
    ordered: bool
    summary: bool
    topic: str
    parts: tuple[str, ...] = ()

    @classmethod
    def of(cls, question: str, rules: ShapeParams = ShapeParams()) -> Shape:
        """The shape of a question under the rules switched on (all, by default)."""
        order, summing, totalling = (
            pattern if rules.shape_broad and on else _NEVER
            for pattern, on in (
                (_ORDER, rules.shape_ordered),
                (_SUMMARY, rules.shape_summary),
                (_AGGREGATE, rules.shape_aggregate),
            )
        )
        ordered = order.search(question) is not None
        summary = summing.search(question) is not None
        broad = ordered or summary or totalling.search(question) is not None
        topic = _topic(question, (order, summing)) if broad else question
        parts = () if ordered or summary or not rules.shape_parts else _parts(topic)
        return cls(broad, ordered, summary, topic, parts)
