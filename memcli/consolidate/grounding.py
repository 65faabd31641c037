"""Whether what a model names is in what it was shown: entity names and triplets in the turns
they cite, and keywords or summaries that are the prompt's own words rather than the turns'.

A weak model names a whole sentence as an entity, relates things no turn mentions ("lives
in Lisbon" from a turn about a conference), and copies the examples of its instructions
("sourdough starter") or the instructions themselves ("The summary and keywords of the
turns are: ...") as if they were what the turns said. The checks are lexical and cheap:
- a name is said in a text when the text holds it, case, accents, possessives and spacing
  aside, or holds each of its content words (compared by their first STEM letters, so
  "Lisbon's" meets "Lisbon" and "hikes" meets "hiking");
- a name has at most MAX_NAME_WORDS words and does not end a sentence;
- text is copied from a prompt when MIN_RUN of its words, two of them content words, run
  inside the prompt's instructions (the prompt without its data blocks) and in no turn.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from memcli.prompting import DATA_CLOSE, DATA_OPEN
from memcli.text import STOPWORDS, strip_possessive

STEM = 5
MAX_NAME_WORDS = 8  # the rules' longest title ("The Old Man and the Sea" and the like)
MIN_RUN = 4
_DATA = re.compile(re.escape(DATA_OPEN) + r".*?" + re.escape(DATA_CLOSE), re.DOTALL)
_WORD = re.compile(r"\w+", re.UNICODE)


def fold(text: str) -> list[str]:
    """Words of a text with case, accents and possessives set aside."""
    folded = unicodedata.normalize("NFKD", text.replace("’", "'"))
    folded = "".join(c for c in folded if not unicodedata.combining(c)).casefold()
    return [w.strip("_") for w in _WORD.findall(" ".join(map(strip_possessive, folded.split())))]


def _content(folded: Sequence[str]) -> list[str]:
    return [w for w in folded if w and w not in STOPWORDS]


class Said:
    """The folded words of some texts, to ask whether a name or phrase is said in them."""

    def __init__(self, texts: Iterable[str]) -> None:
        runs = [fold(t) for t in texts]
        self._joined = " ".join(" ".join(r) for r in runs)
        self._stems = {w[:STEM] for r in runs for w in r}

    def holds(self, phrase: str) -> bool:
        """Whether the texts hold `phrase`, whole or each of its content words."""
        words = fold(phrase)
        if not words:
            return False
        if f" {' '.join(words)} " in f" {self._joined} ":
            return True
        content = _content(words) or words
        return all(w[:STEM] in self._stems for w in content)


def is_name(text: str) -> bool:
    """Whether `text` can be a name at all: a few words, not a sentence."""
    stripped = text.strip()
    return (
        bool(stripped)
        and len(stripped.split()) <= MAX_NAME_WORDS
        and not stripped.endswith((".", "!", "?"))
    )


def instructions(messages: Sequence[dict[str, str]]) -> str:
    """A prompt's own words: its messages without the data blocks they show."""
    return "\n".join(_DATA.sub(" ", m.get("content", "")) for m in messages)


class Prompted:
    """What a prompt itself says (its instructions and examples) beside what its data says,
    to catch a reply that copies the prompt instead of reading the data."""

    def __init__(self, messages: Sequence[dict[str, str]], data: Iterable[str]) -> None:
        self._prompt = f" {' '.join(fold(instructions(messages)))} "
        self._data = Said(data)

    def _in_prompt(self, words: Sequence[str]) -> bool:
        return f" {' '.join(words)} " in self._prompt

    def why_not_keyword(self, phrase: str) -> str | None:
        """Why a keyword is not kept: `keywords_example`, one of the prompt's own (in its
        instructions, not in the data); `keywords_ungrounded`, one the data does not say;
        None to keep it."""
        if self._data.holds(phrase):
            return None
        words = fold(phrase)
        return "keywords_example" if words and self._in_prompt(words) else "keywords_ungrounded"

    def copies(self, text: str) -> bool:
        """Whether a run of MIN_RUN words of `text` (two of them content words) is taken
        from the prompt's instructions and said in no data."""
        words = fold(text)
        for i in range(len(words) - MIN_RUN + 1):
            run = words[i : i + MIN_RUN]
            copied = len(_content(run)) >= 2 and self._in_prompt(run)
            if copied and not self._data.holds(" ".join(run)):
                return True
        return False
