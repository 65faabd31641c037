"""Named things in text, found by rules that hold for any register (no LLM, no word lists).

What counts as a name is read from the shape of a token and from how the whole space writes
it, never from a list of known words:

- identifiers: inner capitals (`camelCase`, `iPhone`), letters with digits (`GPT-4`, `H2O`),
  dotted or underscored words (`numpy.linalg`, `user_id`, `setup.py`), inline `code`,
  `#tags` and `@handles`;
- acronyms: two or more capitals (`HTTP`, `NASA`), unless the space writes the same letters
  in lower case more often ("ok", "btw": a common word typed in capitals);
- proper names: capitalised words and runs of them (`Ada Lovelace`, `Lake Tahoe`), lower-case
  particles between two of them kept inside (`Casa do Largo`, `Ludwig van Beethoven`, `Bank
  of the West`) and `al-`/`el-` names whole (`Bashar al-Assad`). A word at
  the start of a sentence is only a name when the space also writes it capitalised
  mid-sentence; a word the space writes in lower case more often than capitalised
  mid-sentence is a common word that happened to be capitalised (a heading, emphasis);
- titles: short quoted spans ("The Old Man and the Sea").

A version, amount or date written right after a name is kept with that mention as its value
(`Vue.js v3.4.21`, `Plan B $400`), so what is said about a thing over time can be lined up.
Calendar words (month and day names) are dates, not names. Fenced code blocks are code, not
talk, and are skipped.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from memcli.text import canonical_key, strip_possessive

_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
# A word: letters/digits with inner dots, hyphens, apostrophes, slashes, plus/sharp ends.
_TOKEN = re.compile(
    r"[#@]?[^\W_][\w]*(?:[.'’\-/][^\W_][\w]*)*[+#]*"
    r"|`[^`\n]{1,60}`"
    r"|[\"“”«»„]|[.!?;:]|\n",
    re.UNICODE,
)
_QUOTED = (
    re.compile(r"(?:^|(?<=[\s(\[]))[\"“«„]([^\"“”«»„\n]{2,80}?)[\"”»“](?=[\s.,;:!?)\]]|$)"),
    re.compile(r"(?:^|(?<=[\s(\[]))'([^'\n]{2,80}?)'(?=[\s.,;:!?)\]]|$)"),
)
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[-+.]?\w+)?|v\d+|\d+(?:\.x)+", re.IGNORECASE)
_AMOUNT = re.compile(r"[$€£¥]\s?\d[\d,.]*\s?[kKmMbB]?|\d[\d,.]*\s?(?:%|[$€£¥])")
# A file, module or domain name: a dot between words, one part at least two letters long.
_DOTTED = re.compile(r"[^\W_]{2,}\.[^\W\d_]|[^\W_]\.[^\W\d_]{2,}")
_NUMBER_UNIT = re.compile(r"\d[\d,.]*[^\W\d_]{1,4}")
_CALENDAR = frozenset(
    w.lower()
    for w in (*calendar.month_name[1:], *calendar.month_abbr[1:], *calendar.day_name,
              *calendar.day_abbr)
)  # fmt: skip
_SENTENCE_END = frozenset(".!?:;\n")
_QUOTES = frozenset('"“”«»„')
_BOLD = re.compile(r"\*\*[^*\n]+\*\*|__[^_\n]+__")
MAX_NAME_WORDS = 4  # capitalised words; particles between them do not count
#: Lower-case words that join the capitalised words on either side into one name; "the"
#: only after another ("of the"), since alone it mostly starts a new phrase.
PARTICLES = frozenset(
    "da das de del della der des di do dos du la le van von of y bin ibn al el".split()
)
MAX_PARTICLES = 2
_ARTICLE_NAME = re.compile(r"(?:al|el)-[^\W\d_][\w'’]*\Z")
MAX_TITLE_WORDS = 8


@dataclass(frozen=True)
class Mention:
    """One named thing as a text writes it."""

    surface: str  # as written, possessive dropped
    kind: str  # name | acronym | identifier | title | tag
    value: str | None = None  # a version, amount or date written right after it


@dataclass
class CaseStats:
    """How a space writes each word: capitalised mid-sentence, at a sentence start, lower."""

    mid_upper: Counter[str] = field(default_factory=Counter)
    lower: Counter[str] = field(default_factory=Counter)

    def add(self, text: str) -> None:
        """Count the words of one text."""
        for token, start in _tokens(talk(text)):
            word = token.lower()
            if token[:1].isupper() and not start:
                self.mid_upper[word] += 1
            elif token[:1].islower():
                self.lower[word] += 1

    @classmethod
    def of(cls, texts: Iterable[str]) -> CaseStats:
        """Statistics over many texts."""
        stats = cls()
        for text in texts:
            stats.add(text)
        return stats

    def common(self, word: str) -> bool:
        """Whether the space writes a word in lower case more often than capitalised
        mid-sentence: a common word, whatever its case here."""
        key = word.lower()
        return self.lower[key] > self.mid_upper[key]

    def proper(self, word: str, at_start: bool) -> bool:
        """Whether a capitalised word is a name in this space's usage."""
        key = word.lower()
        upper, lower = self.mid_upper[key], self.lower[key]
        if at_start and upper == 0:
            return False
        return upper >= lower


def talk(text: str) -> str:
    """The text without fenced code blocks and URLs."""
    return _URL.sub(" ", _FENCED.sub("\n", text))


def _headings(text: str) -> list[tuple[int, int]]:
    """Character spans of headings: markdown heading lines, bold spans, and lines written
    in title case. A capital there marks the heading, not a name."""
    spans = [m.span() for m in _BOLD.finditer(text)]
    offset = 0
    for line in text.splitlines(keepends=True):
        words = [w for w in line.split() if w[:1].isalpha()]
        caps = sum(1 for w in words if w[:1].isupper())
        if line.lstrip().startswith("#") or (len(words) >= 3 and caps >= 0.6 * len(words)):
            spans.append((offset, offset + len(line)))
        offset += len(line)
    return spans


def _scan(text: str) -> Iterable[tuple[str, int, bool]]:
    """(token, offset, starts a sentence or heading) for a text's words; a sentence mark
    or quote comes as itself with the flag set."""
    headings = _headings(text)
    start = True
    for match in _TOKEN.finditer(text):
        token, at = match.group(0), match.start()
        if token in _SENTENCE_END or token in _QUOTES:
            start = True
            yield token, at, True
            continue
        inside = any(a <= at < b for a, b in headings)
        yield token, at, start or inside
        start = False


def _tokens(text: str) -> list[tuple[str, bool]]:
    """(word, starts a sentence or heading) for the words of a text."""
    return [
        (t, start) for t, _, start in _scan(text) if t not in _SENTENCE_END and t not in _QUOTES
    ]


@lru_cache(maxsize=16384)  # a conversation repeats its words
def shape(token: str) -> str | None:
    """The kind of name a token is by its shape alone, or None for a plain word."""
    if token.startswith("`"):
        inner = token.strip("`").strip()
        return "identifier" if inner and len(inner.split()) <= 2 else None
    if token[0] in "#@" and len(token) > 2:
        return "tag"
    word = strip_possessive(token)
    letters = [c for c in word if c.isalpha()]
    if len(letters) < 2 or _VERSION.fullmatch(word) or _NUMBER_UNIT.fullmatch(word):
        return None
    if any(c.isdigit() for c in word) and word[0].isalpha():
        return "identifier"
    if _DOTTED.search(word) and "'" not in word:
        return "identifier"
    if "_" in word.strip("_"):
        return "identifier"
    if all(c.isupper() for c in letters):
        return "acronym"
    parts = [[c for c in part if c.isalpha()] for part in word.split("-")]
    if any(c.isupper() for p in parts for c in p[1:]) and any(c.islower() for c in letters):
        return "identifier"
    return None


def _capitalised(token: str) -> bool:
    return token[:1].isupper() and any(c.islower() for c in token[1:])


def _value_after(text: str) -> str | None:
    """A version, amount or date at the very start of `text` (after a space)."""
    rest = text.lstrip(" (")
    if len(rest) == len(text) and text[:1] not in (" ", "("):
        return None
    for pattern in (_VERSION, _AMOUNT):
        match = pattern.match(rest)
        if match:
            return match.group(0).rstrip(".,")
    return None


def mentions(text: str, stats: CaseStats | None = None) -> list[Mention]:
    """The named things of a text, in order of appearance (repeats kept)."""
    body = talk(text)
    found = _titles(body)
    spans = list(_name_runs(body, stats))
    for surface, kind, end in spans:
        found.append(Mention(surface, kind, _value_after(body[end : end + 24])))
    return found


def _titles(text: str) -> list[Mention]:
    out = []
    for match in (m for pattern in _QUOTED for m in pattern.finditer(text)):
        inner = match.group(1).strip()
        words = inner.split()
        capitals = sum(1 for w in words if w[:1].isupper())
        if (
            1 < len(words) <= MAX_TITLE_WORDS
            and _capitalised(words[0])
            and capitals * 2 >= len(words)
        ):
            out.append(Mention(inner.rstrip(".,!?"), "title"))
    return out


def _name_runs(text: str, stats: CaseStats | None) -> Iterable[tuple[str, str, int]]:
    """(surface, kind, end offset) of each name or run of capitalised name words.

    Capitalised words, acronyms and capitalised inner-capital words join one run ("New
    York", "AWS Lambda", "GitHub Actions"), with the particles between them ("Casa do
    Largo"); a run of one shaped word keeps its shape's kind.
    """
    run: list[tuple[str, str]] = []
    held: list[str] = []  # particles after the run, kept if a name word follows them
    for token, at, start in _scan(text):
        if token in _SENTENCE_END or token in _QUOTES:
            yield from _close(run)
            run, held = [], []
            continue
        kind = shape(token)
        word = strip_possessive(token)
        if kind == "acronym" and stats is not None and stats.common(word):
            kind = None  # "OK", "BTW": a common word the space mostly writes in lower case
        if _joins(word, kind, start, stats) and _words_in(run) < MAX_NAME_WORDS:
            run += [(p, "particle:0") for p in held]
            held = []
            run.append((word, f"{kind or 'name'}:{at + len(word)}"))
            if word != token:  # a possessive ends the run: "Ana's Cafe" is Ana and a cafe
                yield from _close(run)
                run = []
            continue
        if run and _particle(token, held):
            held.append(token)
            continue
        yield from _close(run)
        run, held = [], []
        if kind is not None:
            surface = token.strip("`").strip() if kind == "identifier" else word
            yield surface, kind, at + len(token)
    yield from _close(run)


def _particle(token: str, held: list[str]) -> bool:
    """Whether `token` may join a name as a particle after the particles `held`."""
    if len(held) >= MAX_PARTICLES:
        return False
    return token in PARTICLES or (token == "the" and bool(held))


def _words_in(run: list[tuple[str, str]]) -> int:
    return sum(1 for _, kind in run if not kind.startswith("particle:"))


def _joins(word: str, kind: str | None, start: bool, stats: CaseStats | None) -> bool:
    """Whether a word can be part of a multi-word name."""
    if kind is None:
        return _is_proper(word, start, stats)
    return kind in ("acronym", "identifier") and word.isalpha() and word[0].isupper()


def _close(run: list[tuple[str, str]]) -> Iterable[tuple[str, str, int]]:
    """The name a run of words makes (nothing for an empty run)."""
    if not run:
        return
    kind, _, end = run[-1][1].rpartition(":")
    kind = run[0][1].rpartition(":")[0] if len(run) == 1 else "name"
    yield " ".join(w for w, _ in run), kind, int(end)


def _is_proper(word: str, at_start: bool, stats: CaseStats | None) -> bool:
    if _ARTICLE_NAME.match(word) and word[3:4].isupper():  # al-Assad, never Al-Assad mid-text
        return not at_start
    if not _capitalised(word) or len(word) < 2 or word.lower() in _CALENDAR:
        return False
    if "'" in word or "’" in word:  # contractions: I'm, Don't
        return False
    if stats is None:
        return not at_start
    return stats.proper(word, at_start)


@dataclass
class Found:
    """Entities named in one unit: key -> (display name, kind), and who mentions what."""

    names: dict[str, tuple[str, str]] = field(default_factory=dict)
    said: dict[int, dict[str, list[str]]] = field(default_factory=dict)  # node -> key -> values
    # node -> key -> statements about the entity whose object is a value (from the LLM)
    statements: dict[int, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)

    def add(self, node_id: int, mention: Mention) -> None:
        key = canonical_key(mention.surface)
        if not key or key.isdigit():
            return
        self.names.setdefault(key, (mention.surface, mention.kind))
        values = self.said.setdefault(node_id, {}).setdefault(key, [])
        if mention.value and mention.value not in values:
            values.append(mention.value)
