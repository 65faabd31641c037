"""Concept labels in one canonical form: plural/singular and British/American twins collapse.

A small rule-based normaliser (no NLP dependency): lower-case ASCII tokens, possessives and
edge determiners dropped, each token singularised and given one spelling. Two labels that
mean the same topic but differ only in number or spelling get the same canonical key, so a
twin is never created in the first place.
"""

from __future__ import annotations

from memcli.text import ascii_words

_IRREGULAR = {
    "children": "child",
    "people": "person",
    "men": "man",
    "women": "woman",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "lives": "life",
    "wives": "wife",
    "knives": "knife",
    "leaves": "leaf",
    "shelves": "shelf",
    "wolves": "wolf",
    "halves": "half",
    "selves": "self",
    "loaves": "loaf",
    "thieves": "thief",
    "calves": "calf",
    "criteria": "criterion",
    "phenomena": "phenomenon",
    "cacti": "cactus",
    "fungi": "fungus",
}

# Words that end in "s" in the singular (or have no singular): left alone.
_INVARIANT = frozenset(
    """
    series species news physics mathematics politics economics gymnastics athletics aerobics
    ethics genetics statistics linguistics robotics electronics acoustics logistics olympics
    clothes pants jeans shorts scissors glasses thanks always perhaps whereas sometimes
    christmas canvas atlas texas lens chaos bias alias gas bus yes
    """.split()
)

# Singulars ending in -ie, -che or -oe, whose plurals the suffix rules would cut too far.
_IE_NOUNS = frozenset(
    """
    movie cookie selfie smoothie brownie zombie rookie calorie pie tie lie veggie hippie
    goodie freebie newbie techie foodie sweetie auntie birdie hoodie genie prairie collie
    indie aussie boogie pixie budgie junkie groupie roadie cutie specie
    """.split()
)
_CHE_NOUNS = frozenset(
    "headache ache cache niche moustache mustache avalanche creche quiche cliche psyche".split()
)
_OE_NOUNS = frozenset("shoe toe canoe hoe oboe floe foe sloe tiptoe".split())

# British spellings (and a few informal forms) mapped to one spelling.
SPELLING = {
    "colour": "color",
    "favourite": "favorite",
    "favour": "favor",
    "honour": "honor",
    "humour": "humor",
    "neighbour": "neighbor",
    "neighbourhood": "neighborhood",
    "behaviour": "behavior",
    "flavour": "flavor",
    "labour": "labor",
    "harbour": "harbor",
    "rumour": "rumor",
    "theatre": "theater",
    "centre": "center",
    "metre": "meter",
    "litre": "liter",
    "fibre": "fiber",
    "travelling": "traveling",
    "traveller": "traveler",
    "cancelled": "canceled",
    "jewellery": "jewelry",
    "grey": "gray",
    "mum": "mom",
    "programme": "program",
    "catalogue": "catalog",
    "practise": "practice",
    "defence": "defense",
    "licence": "license",
    "offence": "offense",
    "pyjama": "pajama",
    "aeroplane": "airplane",
    "analyse": "analyze",
    "yoghurt": "yogurt",
    "doughnut": "donut",
    "ageing": "aging",
    "judgement": "judgment",
    "mould": "mold",
    "sceptical": "skeptical",
    "moustache": "mustache",
    "cosy": "cozy",
    "organise": "organize",
    "realise": "realize",
    "recognise": "recognize",
    "apologise": "apologize",
    "specialise": "specialize",
    "socialise": "socialize",
    "tv": "television",
    "biz": "business",
    "pic": "picture",
    "pics": "picture",
}

# Words that add nothing at the edge of a label ("the_chess_club", "my_bicycle").
_EDGE_WORDS = frozenset("a an the my our your his her their its this that some".split())


def singular(word: str) -> str:
    """The singular of an English noun by rule, with tables for the usual exceptions."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or word in _INVARIANT or not word.endswith("s"):
        return word
    if word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-1] if word[:-1] in _IE_NOUNS else word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith(("ches", "shes", "xes", "zzes")):
        return word[:-1] if word[:-1] in _CHE_NOUNS else word[:-2]
    if word.endswith("oes"):
        return word[:-1] if word[:-1] in _OE_NOUNS else word[:-2]
    return word[:-1]


def spelling(word: str) -> str:
    """One spelling for British/American variants (colour -> color, -isation -> -ization)."""
    if word in SPELLING:
        return SPELLING[word]
    if word.endswith("isation"):
        return word[: -len("isation")] + "ization"
    return word


def norm_token(word: str) -> str:
    """A lower-case word in its canonical form: singular, one spelling."""
    return spelling(singular(word))


def canonical_tokens(label: str) -> tuple[str, ...]:
    """The canonical tokens of a concept label, without determiners at either end."""
    tokens = [norm_token(w) for w in ascii_words(label.replace("_", " ").replace("-", " "))]
    while tokens and tokens[0] in _EDGE_WORDS:
        tokens.pop(0)
    while tokens and tokens[-1] in _EDGE_WORDS:
        tokens.pop()
    return tuple(tokens)


def edit_distance_at_most_one(a: str, b: str) -> bool:
    """True when one insertion, deletion or substitution (or none) turns a into b."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :]
    return a[i:] == b[i + 1 :]


def near_duplicate(a: str, b: str, min_len: int = 7) -> bool:
    """Two canonical labels naming the same topic: same words in another order, or one
    long word misspelt by a single letter (short words are left apart: class/glass)."""
    ta, tb = a.split("_"), b.split("_")
    if a == b or sorted(ta) == sorted(tb):
        return True
    if len(ta) != len(tb):
        return False
    differing = [(x, y) for x, y in zip(ta, tb, strict=True) if x != y]
    if len(differing) != 1:
        return False
    x, y = differing[0]
    return min(len(x), len(y)) >= min_len and edit_distance_at_most_one(x, y)
