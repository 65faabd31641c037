"""Key phrases and TF-IDF for the no-LLM stages.

Key phrases are runs of one to three content words (a stop word, a name, a number or
punctuation ends a run), each word in its canonical form (see `normalize`). Document
frequencies are counted over the episodes of a space, so a phrase's specificity is
judged against the whole conversation history.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from memcli.consolidate.normalize import norm_token
from memcli.text import STOPWORDS, letter_words, word_marks

Phrase = tuple[str, ...]

# Chat filler, contraction stubs, and the verbs, adjectives, adverbs and pronouns so common
# in conversation that they never name a topic. They end a key phrase like a stop word does.
CHAT_STOPWORDS = frozenset(
    """
    yeah yes yep yup nope wow hey hi hello oh ok okay haha hahaha lol omg hmm um uh ah aw
    awesome cool great nice good bad amazing wonderful fantastic incredible beautiful lovely
    glad happy sad sure definitely totally absolutely really actually literally probably
    maybe perhaps also much many lot lots bit little big huge tiny new old last next first
    second third thanks thank please sorry welcome congrats congratulations cheers bye
    im ive youre thats dont didn doesn isn wasn weren aren won wouldn couldn shouldn
    haven hasn hadn cant ll ve re d m gonna wanna gotta kinda sorta dunno
    btw tbh idk imo imho fyi omw brb ttyl np thx pls
    get gets got gotten getting go goes going gone went come comes came coming make makes
    made making take takes took taking taken give gives gave given giving see sees saw seen
    seeing look looks looking looked know knows knew known knowing think thinks thought
    thinking feel feels felt feeling want wants wanted wanting need needs needed needing
    like likes liked liking love loves loved loving say says said saying tell tells told
    telling let lets letting keep keeps kept keeping try tries tried trying use uses used
    using find finds found finding put puts putting mean means meant hope hopes hoped
    hoping guess guessed sound sounds sounded seem seems seemed bring brings brought
    bringing wait waits waited waiting stay stays stayed staying hear hears heard hearing
    appreciate appreciated appreciates doing does did done start starts started starting
    help helps helped helping create creates created creating share shares shared sharing
    enjoy enjoys enjoyed enjoying learn learns learned learnt learning spend spends spent
    remember remembered imagine imagined believe believed forget forgot happen happens
    happened inspire inspires inspired inspiring grow grows grew growing grown change
    changed changing build builds built follow followed move moved moving check checked
    stand stands stood teach teaches taught push pushed pushing reach reached call called
    turn turned run ran talk talked talking ask asked asking work worked working wish
    wished miss missed care cared matter mattered agree agreed understand understood
    show showed shown showing happy excited exciting proud grateful thankful lucky
    important special best better worse worst right wrong true real sweet super pretty
    whole full free hard easy tough fine ready able sure tough crazy fun funny interesting
    positive negative different same similar own certain whole long short high low
    together through myself yourself himself herself ourselves themselves itself
    always never ever still even well just now then soon already yet again once often
    usually sometimes later ago away back around along almost enough quite rather though
    although anyway especially maybe else instead exactly certainly
    something anything everything nothing someone anyone everyone somebody anybody
    everybody somewhere anywhere everywhere whatever whenever wherever
    thing things stuff way ways kind sort part lot others other another
    today tonight tomorrow yesterday day days week weeks month months year years time times
    morning evening night weekend recently lately currently
    one two three four five six seven eight nine ten hundred thousand
    off down up out inside outside across behind beside upon within without toward towards
    """.split()
)
# Suffixes of adverbs and adjectives ("slowly", "thoughtful", "nervous", "hopeless"), and
# nouns that merely look like such adverbs.
_NOT_TOPIC_SUFFIXES = ("ly", "ful", "ous", "less")
_LY_NOUNS = frozenset(
    "italy july assembly butterfly anomaly monopoly supply rally jelly belly lily bully"
    " holly ally reply family".split()
)


def _not_topic(word: str) -> bool:
    """Adverbs and adjectives recognised by their ending."""
    return word.endswith(_NOT_TOPIC_SUFFIXES) and word not in _LY_NOUNS and len(word) > 5


STOP = STOPWORDS | CHAT_STOPWORDS

# A phrase said in more than GENERIC_SPREAD of a space's stretches of STRETCH turns is part
# of how these people always talk ("life", "example"), not a topic: it would only make a hub.
# Spaces shorter than MIN_STRETCHES stretches are too short to tell.
STRETCH = 20
MIN_STRETCHES = 4
GENERIC_SPREAD = 0.5


def name_tokens(names: Iterable[str | None]) -> frozenset[str]:
    """Lower-case words of speaker names: they never become key phrases (person hubs)."""
    out: set[str] = set()
    for name in names:
        for word in letter_words(name or ""):
            if len(word) >= 2:
                out.add(word.lower())
    return frozenset(out)


def _is_name(word: str, names: frozenset[str]) -> bool:
    # Nicknames are usually a prefix of the name: "Alex" for "Alexandra".
    return word in names or (len(word) >= 3 and word in _prefixes(names))


@lru_cache(maxsize=32)
def _prefixes(names: frozenset[str]) -> frozenset[str]:
    return frozenset(n[:i] for n in names for i in range(3, len(n) + 1))


@lru_cache(maxsize=8192)  # consolidation reads a turn's phrases in several stages
def content_runs(text: str, names: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], ...]:
    """Runs of canonical content words; stop words, names, numbers and punctuation split them."""
    runs: list[list[str]] = [[]]
    for raw in word_marks(text):
        word = raw.lower().replace("’", "'")
        base = word.split("'", 1)[0]
        if (
            not base.isalpha()
            or len(base) < 3
            or word in STOP
            or base in STOP
            or _not_topic(base)
            or _is_name(base, names)
        ):
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(norm_token(base))
        if word != base and runs[-1]:  # "anna's" / "kid's": the possessive ends the run
            runs.append([])
    return tuple(tuple(r) for r in runs if r)


def phrases(text: str, names: frozenset[str] = frozenset(), longest: int = 3) -> list[Phrase]:
    """Every 1..`longest`-word phrase inside the content runs of a text (with repeats)."""
    out: list[Phrase] = []
    for run in content_runs(text, names):
        for n in range(1, longest + 1):
            out.extend(tuple(run[i : i + n]) for i in range(len(run) - n + 1))
    return out


def is_generic(phrase: Phrase, common: frozenset[Phrase] = frozenset()) -> bool:
    """True for a phrase that cannot name a topic: one of the `common` phrases (the space's
    generic phrases, see `Corpus.generic`), only stop words, or a phrase whose last word is
    a past participle ("felt relieved")."""
    if phrase in common or all(w in STOP for w in phrase):
        return True
    head = phrase[-1]
    return head.endswith("ed") and not head.endswith("eed") and len(head) > 4


@dataclass
class Corpus:
    """Document frequencies of phrases over the episodes of a space."""

    names: frozenset[str]
    docs: int = 0
    df: Counter[Phrase] = field(default_factory=Counter)
    postings: dict[Phrase, list[int]] = field(default_factory=dict)  # phrase -> doc ids
    generic: frozenset[Phrase] = frozenset()  # phrases said all through the space

    @classmethod
    def build(cls, docs: Iterable[tuple[int, str]], names: frozenset[str]) -> Corpus:
        """Count in how many documents (id, text), given in conversation order, each phrase
        occurs, and where; find the phrases spread over most of the conversation."""
        docs = list(docs)
        corpus = cls(names, docs=len(docs))
        stretches = len(docs) // STRETCH
        last: dict[Phrase, int] = {}  # phrase -> the last stretch it was seen in
        spread: Counter[Phrase] = Counter()  # phrase -> how many stretches it is in
        for i, (doc_id, text) in enumerate(docs):
            at = i * stretches // len(docs)
            for phrase in set(phrases(text, names)):
                corpus.df[phrase] += 1
                corpus.postings.setdefault(phrase, []).append(doc_id)
                if last.get(phrase) != at:
                    last[phrase] = at
                    spread[phrase] += 1
        if stretches >= MIN_STRETCHES:
            cut = GENERIC_SPREAD * stretches
            corpus.generic = frozenset(p for p, n in spread.items() if n > cut)
        return corpus

    def is_generic(self, phrase: Phrase) -> bool:
        """`is_generic` with this space's generic words."""
        return is_generic(phrase, self.generic)

    def idf(self, phrase: Phrase) -> float:
        """Smoothed inverse document frequency (unseen phrases count as seen once)."""
        return math.log((1 + self.docs) / (1 + self.df.get(phrase, 0))) + 1.0

    def vector(self, text: str) -> dict[Phrase, float]:
        """Sparse TF-IDF vector of a text's single words (for lexical similarity)."""
        counts = Counter(p for p in phrases(text, self.names, longest=1))
        return {p: c * self.idf(p) for p, c in counts.items()}


def sparse_cosine(a: dict[Phrase, float], b: dict[Phrase, float]) -> float:
    """Cosine similarity of two sparse vectors (0 when either is empty)."""
    if not a or not b:
        return 0.0
    if len(a) > len(b):
        a, b = b, a
    dot = sum(v * b.get(k, 0.0) for k, v in a.items())
    na = math.sqrt(sum(v * v for v in a.values()))
    nb = math.sqrt(sum(v * v for v in b.values()))
    return dot / (na * nb) if na and nb else 0.0


def sparse_mean(vectors: Sequence[dict[Phrase, float]]) -> dict[Phrase, float]:
    """The element-wise mean of sparse vectors."""
    total: Counter[Phrase] = Counter()
    for v in vectors:
        total.update(v)
    n = max(1, len(vectors))
    return {k: v / n for k, v in total.items()}


def key_phrases(
    texts: Sequence[str],
    corpus: Corpus,
    limit: int,
    *,
    min_df: int = 1,
    max_df: float | None = None,
    min_turns: int = 1,
) -> list[tuple[Phrase, float]]:
    """The `limit` best phrases of a group of texts by TF-IDF, longer phrases favoured.

    Term frequency counts the texts (turns) that contain a phrase; a single word must be
    in `min_turns` of them, so a concept is something the segment is about, not a word
    that happened to be said once.

    `min_df` asks a phrase to occur in that many episodes of the space (for concepts: a
    one-off word connects nothing); `max_df` caps its document frequency so no phrase
    becomes a hub. A phrase overlapping a better-scored chosen phrase is skipped.
    """
    if limit <= 0:
        return []
    tf = Counter(p for t in texts for p in set(phrases(t, corpus.names)))
    scored = []
    for phrase, count in tf.items():
        df = corpus.df.get(phrase, 0)
        if df < min_df or (max_df is not None and df > max_df) or corpus.is_generic(phrase):
            continue
        if count < min_turns and len(phrase) == 1:
            continue
        length_bonus = 1.0 + 0.5 * (len(phrase) - 1)
        scored.append((phrase, count * corpus.idf(phrase) * length_bonus))
    scored.sort(key=lambda item: (-item[1], item[0]))
    chosen: list[tuple[Phrase, float]] = []
    for phrase, score in scored:
        if any(_contains(c, phrase) or _contains(phrase, c) for c, _ in chosen):
            continue
        chosen.append((phrase, score))
        if len(chosen) >= limit:
            break
    return chosen


def _contains(outer: Phrase, inner: Phrase) -> bool:
    n = len(inner)
    return any(outer[i : i + n] == inner for i in range(len(outer) - n + 1))
