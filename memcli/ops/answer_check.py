"""A cheap check of an answer against what it cites: the names it gives that no cited memory
(nor the question) says.

A weak model answers with a plausible citation and a wrong value ("Alec", citing the turn
that says "Miso"). What can be checked without another model is the answer's names: the
capitalised words, acronyms, identifiers and titles it writes (memcli.consolidate.names).
A paraphrase keeps them ("the cat is Miso" for "my cat's name is Miso"), so a correct
answer passes, while a name that none of the items it cites holds is flagged. A name at
the start of a sentence is only taken as one in a bare answer (three words at most), since
there a capital says nothing ("Unfortunately, ..."). An answer that cites nothing is
checked against the whole memory it read. Numbers and dates are not checked: the model
may have worked them out (a date from "last week").
"""

from __future__ import annotations

import re

from memcli.consolidate.grounding import Said
from memcli.consolidate.names import mentions
from memcli.text import STOPWORDS

_ITEM = re.compile(r"^[ \t]*(?:[-*][ \t]+)?\[([a-z]{2}\d+)\]", re.MULTILINE)
_HEADING = re.compile(r"^#", re.MULTILINE)
_CAPITALISED = re.compile(r"\b[^\W\d_][\w'’-]*", re.UNICODE)
BARE_WORDS = 3


def items(context: str) -> dict[str, str]:
    """Node id -> the text of its item in a packed context (to the next item or heading)."""
    starts = [(m.start(), m.group(1)) for m in _ITEM.finditer(context)]
    out: dict[str, str] = {}
    for n, (at, node_id) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(context)
        heading = _HEADING.search(context, at, end)
        text = context[at : heading.start() if heading else end]
        out[node_id] = f"{out[node_id]}\n{text}" if node_id in out else text
    return out


def names_in(answer: str) -> list[str]:
    """The names an answer gives (see the module's note on sentence starts)."""
    found = [m.surface for m in mentions(answer)]
    if len(answer.split()) <= BARE_WORDS:
        words = _CAPITALISED.findall(answer)
        found += [w for w in words if w[:1].isupper() and w.lower() not in STOPWORDS]
    return list(dict.fromkeys(found))


def unsupported(answer: str, citations: list[str], context: str, question: str) -> list[str]:
    """The answer's names that neither its cited items (the whole context when it cites
    none) nor the question say."""
    shown = items(context)
    cited = [shown[c] for c in citations if c in shown]
    said = Said([*(cited or [context]), question])
    return [name for name in names_in(answer) if not said.holds(name)]
