"""Text helpers every layer shares: words, stop words, token estimates, truncation.

Each tokeniser here has one job, named after it: `words` for search and overlap,
`word_marks` for key-phrase runs, `ascii_words` for concept labels, `name_words` and
`letter_words` for people's names, `bare_words` for answer scores, `count_tokens` (model
tokens) and `word_count` (words) for budgets. Nothing else in memcli splits text into words
(except the store's full-text query, which is the store's own).
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD_OR_MARK = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?|[.,;:!?()\"]")
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_NAME_WORD = re.compile(r"[A-Za-z][\w'-]*")
_LETTERS = re.compile(r"[A-Za-z]+")
_PUNCTUATION = re.compile(r"[^\w\s]|_", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
# user[:password]@ right after a URL's scheme, before its host: not an '@' in a path, query
# or fragment, nor a '//' in ordinary prose.
_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]+@")
# A query parameter that carries a credential: libpq's password and sslpassword, and the
# names HTTP APIs give a key or token (`?key=`, `?api_key=`, `?access_token=`...).
_SECRET_PARAM = re.compile(
    r"([?&](?:ssl)?(?:password|passwd|pwd|secret|token|access_token|api[_-]?key|key)=)"
    r"[^&#\s'\"]*",
    re.IGNORECASE,
)

# Words that carry no topic; dropped from full-text queries so BM25 ranks on content.
# ("may" is not among them: it is also a month.)
STOPWORDS = frozenset(
    """
    a an the and or but if then else of to in on at by for with about from into over after
    before during since until as is are was were be been being am do does did done have has
    had having i me my mine we us our you your he him his she her it its they them their
    this that these those there here what which who whom whose when where why how would
    could should can will shall might must not no yes so than too very just also any
    some all each every both few more most other such only own same s t don
    """.split()
)


def words(text: str) -> list[str]:
    """Lower-cased words (runs of letters, digits and underscores), in order."""
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> set[str]:
    """Lower-cased words of a text without stop words."""
    return {w for w in words(text) if w not in STOPWORDS}


def vocabulary_words(text: str) -> set[str]:
    """The distinct words of a text that stand for something on their own: lower-cased,
    letters only, three or more of them, no stop word (memcli.store.words)."""
    return {w for w in words(text) if len(w) > 2 and w.isalpha() and w not in STOPWORDS}


def count_tokens(text: str) -> int:
    """An estimate of a text's model tokens: its words and punctuation marks."""
    return len(_TOKEN.findall(text))


def word_marks(text: str) -> list[str]:
    """ASCII words (with a trailing 's or 't part kept on) and the punctuation marks that
    end a phrase, in order and in their original case."""
    return _WORD_OR_MARK.findall(text)


def ascii_words(text: str) -> list[str]:
    """Lower-case ASCII words of a text, possessive 's dropped, '&' read as 'and'."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    folded = folded.lower().replace("&", " and ").replace("’", "'")
    folded = re.sub(r"'s\b", "", folded)
    return _ASCII_WORD.findall(folded)


def name_words(text: str) -> list[str]:
    """Words as names are written: a letter, then letters, digits, apostrophes, hyphens."""
    return _NAME_WORD.findall(text)


def letter_words(text: str) -> list[str]:
    """Runs of ASCII letters, in their original case."""
    return _LETTERS.findall(text)


def bare_words(text: str) -> list[str]:
    """Lower-cased words with every punctuation mark (and underscore) read as a space, so
    "2023-05-07" and "Ann's" keep their parts."""
    return _PUNCTUATION.sub(" ", text.lower()).split()


def sentences(text: str) -> list[str]:
    """A text split after sentence-ending punctuation."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def word_count(text: str) -> int:
    """How many whitespace-separated words a text has (what word budgets count)."""
    return len(text.split())


def one_line(text: str) -> str:
    """The text with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def truncate(text: str, limit: int) -> str:
    """The text cut to at most `limit` characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def hide_userinfo(url: str) -> str:
    """The URL with any user:password@ part and any credential in its query masked, fit
    for a message or a listing."""
    return hide_query_secrets(_USERINFO.sub(r"\1***@", url))


def hide_query_secrets(url: str) -> str:
    """The URL with the value of each query parameter that carries a credential masked."""
    return _SECRET_PARAM.sub(r"\1***", url)


def hide_secret(text: str, secret: str) -> str:
    """The text with each whole occurrence of `secret` masked: not where it is only part of
    a longer word (a short key must not garble ordinary words)."""
    if not secret:
        return text
    return re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", "***", text)


def strip_possessive(word: str) -> str:
    """A word without a trailing possessive ('s, ’s, or a lone apostrophe)."""
    for end in ("'s", "’s", "'S"):
        if word.endswith(end) and len(word) > len(end) + 1:
            return word[: -len(end)]
    return word.rstrip("'’")


def canonical_key(surface: str) -> str:
    """The identity of a name: case, accents, possessive, spacing and inner punctuation aside."""
    folded = unicodedata.normalize("NFKD", strip_possessive(surface.strip()))
    folded = "".join(c for c in folded if not unicodedata.combining(c)).casefold()
    return " ".join(re.sub(r"[^\w+#\s]|_", "", part) for part in folded.split()).strip()


# What a terminal would act on rather than show: C0 controls but tab and newline (ESC starts
# screen-clearing and title-setting sequences, CR overwrites the line, BEL rings), DEL, the
# C1 controls (U+009B is a one-byte CSI), and the bidi overrides that reorder what is shown.
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` with every control character a terminal would act on shown as an escape
    (`\\x1b`, `\\r`, `\\u202e`) instead; tabs and newlines stay."""
    return _TERMINAL_CONTROL.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
