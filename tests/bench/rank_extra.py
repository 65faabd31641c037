"""Candidate signals not (yet) in the default, dumped beside SIGNALS to be judged offline.

`tests.bench.rank_dump --extra` appends these columns to every pool; tests/bench/rank_fit.py
reads them by name (`--signals fulltext,...,nbr`), so a candidate is fitted and judged
leave one genre out before any code of the default changes. Each is a general idea:

- context, speaker, total: the full-text columns the default leaves out (BM25 of the turns
  before, of the speaker's name) and their weighted sum as the first pass ranks by it;
- before, after, nbr: the plain similarity of the turn before, the turn after, and the
  larger of the two (adjacent-turn smoothing, whatever the turn before asks);
- ctxvec: cosine with the embedding of the turn together with the turn before it (a
  contextual embedding, as ingest would store it if it embedded a turn with its context);
- prf: BM25 of pseudo-relevance feedback words (the rarest words of the best few
  candidates' texts, not in the question), searched as one more full-text query.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any

import numpy as np

from memcli.models import embedding_text
from memcli.retrieval import SearchContext
from memcli.retrieval.firstpass import ranked
from memcli.retrieval.relevance import Relevance
from memcli.text import STOPWORDS

EXTRA = (
    "context", "speaker", "total", "before", "after", "nbr", "ctxvec", "prf", "prevcos",
    "nextcos", "ctxown",
)  # fmt: skip
PRF_DOCS = 3  # best candidates read for feedback words
PRF_WORDS = 8  # feedback words searched
CONTEXT_WORDS = int(os.environ.get("RANK_EXTRA_CONTEXT_WORDS", "0"))  # 0: the whole turn


def _opening(text: str) -> str:
    """The turn's opening CONTEXT_WORDS words (all when 0)."""
    return " ".join(text.split()[:CONTEXT_WORDS]) if CONTEXT_WORDS else text


def extra_rows(
    ctx: SearchContext, found: Relevance, ids: list[int], cache: dict[int, Any]
) -> np.ndarray:
    """One row of EXTRA per memory in `ids`; `cache` keeps contextual vectors per node."""
    fp, sig = found.fp, found.signals
    scale = sig.scale
    after: dict[int, int] = {}
    for a, b, _, _ in ctx.store.edge_rows(ids, ["NEXT"]):
        after[a] = b
    near = [j for j in (*(sig.before.get(i, -1) for i in ids), *after.values()) if j >= 0]
    fp.extend(ctx, near)  # their cosine: the plain similarity needs nothing else
    vectors = _contextual(ctx, found, ids, cache)
    own_first = _contextual(ctx, found, ids, cache, own_first=True)
    prf = _feedback(ctx, found)
    rows = []
    for i in ids:
        b, a = sig.before.get(i, -1), after.get(i, -1)
        pb = sig.plain(b) if b >= 0 else 0.0
        pa = sig.plain(a) if a >= 0 else 0.0
        cos = float(vectors[i] @ fp.vector) if fp.vector is not None and i in vectors else 0.0
        rows.append([fp.context.get(i, 0.0) / scale, fp.speaker.get(i, 0.0) / scale,
                     fp.lexical.get(i, 0.0) / scale, pb, pa, max(pb, pa), cos,
                     prf.get(i, 0.0), fp.cosine.get(b, 0.0), fp.cosine.get(a, 0.0),
                     float(own_first[i] @ fp.vector) if fp.vector is not None and i in own_first
                     else 0.0])  # fmt: skip
    return np.asarray(rows, dtype=np.float32).reshape(len(ids), len(EXTRA))


def _contextual(
    ctx: SearchContext,
    found: Relevance,
    ids: list[int],
    cache: dict[Any, Any],
    own_first: bool = False,
) -> dict[int, Any]:
    """Each memory's embedding together with the turn before it (cached per node): the
    turn before first, or (`own_first`) after the memory's own text."""
    sig = found.signals
    todo = [i for i in ids if (i, own_first) not in cache and i in sig.nodes]
    if todo and ctx.embedder is not None:
        texts = []
        for i in todo:
            node, b = sig.nodes[i], sig.before.get(i, -1)
            own = embedding_text(node.text, node.speaker)
            prev = sig.nodes.get(b)
            other = "" if prev is None else embedding_text(_opening(prev.text), prev.speaker)
            texts.append(own + "\n" + other if own_first else other + "\n" + own)
        for i, v in zip(todo, ctx.embedder.embed(texts), strict=True):
            cache[i, own_first] = v
    return {i: cache[i, own_first] for i in ids if (i, own_first) in cache}


def _feedback(ctx: SearchContext, found: Relevance) -> dict[int, float]:
    """BM25 (over the question's best BM25) of the feedback words of the best candidates."""
    best = [i for i, _ in ranked(found.scores)[:PRF_DOCS]]
    asked = set(re.findall(r"\w+", found.signals.question.lower()))
    counts: Counter[str] = Counter()
    for i in best:
        node = found.signals.nodes.get(i)
        if node is None:
            continue
        words = {w for w in re.findall(r"[a-z]{3,}", node.text.lower())}
        counts.update(w for w in words if w not in STOPWORDS and w not in asked)
    if not counts:
        return {}
    # Words the best candidates share first, then the longer (rarer) ones.
    chosen = sorted(counts, key=lambda w: (-counts[w], -len(w), w))[:PRF_WORDS]
    rows = ctx.store.text_search(ctx.space, " ".join(chosen), 400)
    top = max((s for _, s in rows), default=0.0) or 1.0
    return {i: s / top for i, s in rows}
