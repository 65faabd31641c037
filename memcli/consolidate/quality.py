"""What a derived memory (a fact, a reflection, a summary) must be before it is stored.

A weak model copies the prompt's example, repeats a turn word for word, writes the same
claim three times or invents one the turns never made. Such memories add nothing a search
of the turns does not already find, and compete with the turns for the reader's attention:
they are dropped before anything is written, and counted under the reason (`dropped_...`).
The rules are lexical and cheap, and a good model's memories pass them:
- empty: no content word (only stop words, punctuation, placeholders such as "..."), or
  none with a letter (a bare date or number);
- verbatim: its words run word for word inside one source (or a source's inside it),
  compared with the source as shown (id, date, speaker) and with what was said alone (a
  turn without its speaker, so a preamble before a copied turn does not hide the copy):
  a copy, not a restatement;
- ungrounded: fewer than `grounded` (a share) of its content words are found in the sources
  it cites, and never none (a word is compared by its first STEM letters, so "walking"
  meets "walked"): a model that summarises its instructions, or the world, instead of the
  turns;
- duplicate: its content words nearly the same set as a memory kept before it or shown to
  the model as already stored (Jaccard >= DUPLICATE).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memcli.text import STOPWORDS, words

#: Words a model writes when it has nothing to say, or copies from a prompt's example.
PLACEHOLDERS = frozenset(
    "none null nil unknown na n text fact facts example observation reflection summary "
    "nothing empty placeholder todo tbd".split()
)
DUPLICATE = 0.8
#: First and second person ("I", "my", "you", "we"): a fact that speaks so is not
#: self-contained (whose "my"?), and is most often a turn said again, not a claim.
_PERSONAL = re.compile(
    r"(?<![\w/])I(?![\w/])|\b(?:[Mm]e|[Mm]y|[Mm]ine|[Mm]yself|[Ww]e|[Uu]s|[Oo]urs?|[Yy]ou|"
    r"[Yy]ours?|[Yy]ourself)\b"
)
STEM = 5
#: Share of a memory's content words its sources must hold: facts and summaries restate
#: what the turns say; a reflection generalises over facts, so it may use words of its own.
GROUNDED = 0.5
GROUNDED_REFLECTION = 0.25
MIN_RUN = 4  # words: a shorter run inside a source (or a short quote) is not a copy
# What a shown source says, without the parts of its line prompts add around it: the id and
# date ("[ep3] (2023-05-07) "), a speaker ("Ana: "), and the resolved dates after it.
_SHOWN_PREFIX = re.compile(r"^\s*(?:- )?(?:\[\w+\]\s*)?(?:\([^)]*\)\s*)?(?:[^:\n]{1,60}?:\s)?")
_DATE_HINTS = re.compile(r"\s*\{dates: [^}]*\}\s*$")


def _content(text: str) -> set[str]:
    return {w for w in words(text) if w not in STOPWORDS and w not in PLACEHOLDERS}


def _stems(text: str) -> set[str]:
    return {w[:STEM] for w in _content(text)}


def _inside(short: list[str], long: list[str]) -> bool:
    """Whether `short` runs word for word somewhere in `long`."""
    n = len(short)
    return n >= MIN_RUN and any(long[i : i + n] == short for i in range(len(long) - n + 1))


def said(source: str) -> str:
    """What a shown source says: its line without id, date, speaker and date hints."""
    return _DATE_HINTS.sub("", _SHOWN_PREFIX.sub("", source, count=1))


def verbatim(text: str, source: str) -> bool:
    """Whether `text` and `source` (as shown, or what it says alone) are copies: one's
    words run inside the other's."""
    mine = words(text)
    for shown in dict.fromkeys((source, said(source))):
        theirs = words(shown)
        if _inside(mine, theirs) or _inside(theirs, mine):
            return True
    return False


def personal(text: str) -> bool:
    """Whether a claim speaks in the first or second person rather than naming who."""
    return _PERSONAL.search(text) is not None


def jaccard(a: set[str], b: set[str]) -> float:
    """|a & b| / |a | b| (0 for two empty sets)."""
    return len(a & b) / len(a | b) if a or b else 0.0


class Sieve:
    """Checks one unit's derived memories in turn; remembers those kept, for duplicates."""

    def __init__(self, known: Iterable[str] = (), grounded: float = GROUNDED) -> None:
        self._grounded = grounded
        self._seen = [_content(t) for t in known]
        # The same words again are not a near-duplicate: the caller merges exact twins
        # (a stored fact gains the new provenance).
        self._exact = {tuple(words(t)) for t in known}

    def reason(self, text: str, sources: Sequence[str]) -> str | None:
        """Why `text` must be dropped (`dropped_empty`, ...), or None to keep it (and
        remember it). `sources`: the texts it cites (turns with their speakers, facts)."""
        content = _content(text)
        if not any(ch.isalpha() for word in content for ch in word):
            return "dropped_empty"
        if any(verbatim(text, s) for s in sources):
            return "dropped_verbatim"
        if sources and not self._is_grounded(text, sources):
            return "dropped_ungrounded"
        exact = tuple(words(text))
        if exact not in self._exact and any(
            jaccard(content, seen) >= DUPLICATE for seen in self._seen
        ):
            return "dropped_duplicate"
        self._seen.append(content)
        self._exact.add(exact)
        return None

    def _is_grounded(self, text: str, sources: Sequence[str]) -> bool:
        stems = _stems(text)
        found = stems & set().union(*map(_stems, sources))
        return bool(found) and len(found) >= self._grounded * len(stems)
