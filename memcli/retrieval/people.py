"""The people a question names: whose memories to look at, not words to match.

"What are Ana's hobbies?" asks about Ana's own turns; the word "Ana" is no evidence of a
hobby, and in a chat it is mostly written by the other person, addressing her ("Thanks
Ana!"). So a capitalised word of the question that names a speaker of the space becomes the
role cue (memcli.retrieval.signals) and leaves the text that is searched.

People in real chats are often called by a name that is not their account's ("Bea"
writing as "trix_88"). Such a name is read from how the space uses it, never from a list: a
word that one speaker writes as a vocative (at the very start of a turn, "Hi Bea!",
"Bea, look", and at its end, "Thank you Bea!") again and again, that the other
speakers do not use so, names the person those turns answer: the speaker of the turns
next to them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memcli.text import STOPWORDS, name_words, strip_possessive

if TYPE_CHECKING:
    from memcli.models import Node
    from memcli.retrieval import SearchContext

# How much use makes a word someone's name: vocatives in all, of them at a turn's start,
# and the share written by one speaker and answered by one other.
VOCATIVES = 3
OPENINGS = 2
SHARE = 0.8
_MENTIONS = 300  # turns read to count a word's uses


@dataclass(frozen=True)
class People:
    """The speakers a question names (lower case), and its text without their names."""

    speakers: frozenset[str]
    query: str


def named_speakers(ctx: SearchContext, question: str) -> People:
    """The speakers the question names, by their name or by what they are called."""
    found: dict[str, str] = {}
    for word in dict.fromkeys(strip_possessive(w) for w in name_words(question)):
        if not word[:1].isupper() or word.lower() in STOPWORDS or len(word) < 2:
            continue
        speaker = ctx.store.speaker_named(ctx.space, word) or addressee(ctx, word)
        if speaker is not None:
            found[word] = speaker.lower()
    if not found:
        return People(frozenset(), question)
    return People(frozenset(found.values()), _without(question, set(found)))


def _without(question: str, names: set[str]) -> str:
    """The question without the given names (possessives included); the question itself
    when nothing but them and function words would be left."""
    kept = [w for w in question.split() if strip_possessive(w.strip("?,.!;:\"'()")) not in names]
    text = " ".join(kept)
    rest = [w for w in re.findall(r"\w+", text.lower()) if w not in STOPWORDS]
    return text if rest else question


def addressee(ctx: SearchContext, word: str) -> str | None:
    """The speaker a word names when the space uses it to address them (else None)."""
    found = ctx.store.text_search(ctx.space, word, _MENTIONS, ["episode"])
    turns = ctx.store.nodes_by_ids([i for i, _ in found])
    calling = [n for n in turns.values() if n.speaker and _vocative(n.text, word)]
    if len(calling) < VOCATIVES or sum(_opening(n.text, word) for n in calling) < OPENINGS:
        return None
    caller, count = Counter(n.speaker for n in calling).most_common(1)[0]
    if count < SHARE * len(calling):
        return None
    return _answerer(ctx, [n for n in calling if n.speaker == caller], caller)


def _answerer(ctx: SearchContext, calls: list[Node], caller: str | None) -> str | None:
    """The one speaker (other than the caller) of the turns next to these turns."""
    ids = [n.id for n in calls]
    near = {n for a, b, _, _ in ctx.store.edge_rows(ids, ["NEXT"]) for n in (a, b)} - set(ids)
    others = Counter(
        n.speaker for n in ctx.store.nodes_by_ids(near).values() if n.speaker not in (None, caller)
    )
    if not others:
        return None
    speaker, count = others.most_common(1)[0]
    return speaker if count >= SHARE * sum(others.values()) else None


def _opening(text: str, word: str) -> bool:
    """The word opens the turn, alone or after one word, and a mark follows: "Hi Bea!"."""
    return re.match(rf"\W*(?:\w+\W+)?{re.escape(word)}\s*[,!.?]", text) is not None


def _vocative(text: str, word: str) -> bool:
    """The word opens or closes the turn with a mark after it ("Thank you Bea!")."""
    closing = re.search(rf"\w\W+{re.escape(word)}\W*$", text) is not None
    return _opening(text, word) or closing
