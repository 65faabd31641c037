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

Both are steps of `hybrid` with a switch (`people_names`, `people_aliases`) and the numbers
of the second are parameters (`alias_*`), all in PeopleParams.
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


@dataclass(frozen=True)
class PeopleParams:
    """Whom a question names, a switch each, and how much use makes a word someone's name
    (part of `hybrid`'s parameters, memcli.retrieval.params.HybridParams)."""

    people_names: bool = True  # a speaker's name in the question is a role, not words to match
    people_aliases: bool = True  # ... and so is what the chat calls them (off: account names)
    alias_vocatives: int = 3  # vocatives a word needs in all to name someone
    alias_openings: int = 2  # ... of them at the start of a turn
    alias_share: float = 0.8  # share of them by one speaker, and of the answers by one other
    alias_turns: int = 300  # turns read to count a word's uses


@dataclass(frozen=True)
class People:
    """The speakers a question names (lower case), and its text without their names."""

    speakers: frozenset[str]
    query: str


def named_speakers(
    ctx: SearchContext, question: str, params: PeopleParams = PeopleParams()
) -> People:
    """The speakers the question names, by their name or by what they are called (as far
    as `params` switches these on)."""
    if not params.people_names:
        return People(frozenset(), question)
    found: dict[str, str] = {}
    for word in dict.fromkeys(strip_possessive(w) for w in name_words(question)):
        if not word[:1].isupper() or word.lower() in STOPWORDS or len(word) < 2:
            continue
        speaker = ctx.store.speaker_named(ctx.space, word) or (
            addressee(ctx, word, params) if params.people_aliases else None
        )
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


def addressee(ctx: SearchContext, word: str, params: PeopleParams = PeopleParams()) -> str | None:
    """The speaker a word names when the space uses it to address them (else None)."""
    found = ctx.store.text_search(ctx.space, word, params.alias_turns, ["episode"])
    turns = ctx.store.nodes_by_ids([i for i, _ in found])
    calling = [n for n in turns.values() if n.speaker and _vocative(n.text, word)]
    openings = sum(_opening(n.text, word) for n in calling)
    if len(calling) < params.alias_vocatives or openings < params.alias_openings:
        return None
    caller, count = Counter(n.speaker for n in calling).most_common(1)[0]
    if count < params.alias_share * len(calling):
        return None
    calls = [n for n in calling if n.speaker == caller]
    return _answerer(ctx, calls, caller, params.alias_share)


def _answerer(
    ctx: SearchContext, calls: list[Node], caller: str | None, share: float
) -> str | None:
    """The one speaker (other than the caller) of the turns next to these turns."""
    ids = [n.id for n in calls]
    near = {n for a, b, _, _ in ctx.store.edge_rows(ids, ["NEXT"]) for n in (a, b)} - set(ids)
    others = Counter(
        n.speaker for n in ctx.store.nodes_by_ids(near).values() if n.speaker not in (None, caller)
    )
    if not others:
        return None
    speaker, count = others.most_common(1)[0]
    return speaker if count >= share * sum(others.values()) else None


def _opening(text: str, word: str) -> bool:
    """The word opens the turn, alone or after one word, and a mark follows: "Hi Bea!"."""
    return re.match(rf"\W*(?:\w+\W+)?{re.escape(word)}\s*[,!.?]", text) is not None


def _vocative(text: str, word: str) -> bool:
    """The word opens or closes the turn with a mark after it ("Thank you Bea!")."""
    closing = re.search(rf"\w\W+{re.escape(word)}\W*$", text) is not None
    return _opening(text, word) or closing
