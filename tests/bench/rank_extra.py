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
  candidates' texts, not in the question), searched as one more full-text query;
- prevcos, nextcos, ctxown: cosines of the turns before and after; the contextual
  embedding with the turn's own text first (what ingest stores now: `vector`);
- vprf3/5/10, rocchio3/5: feedback in embedding space, cosine with the centroid of the best
  3/5/10 candidates' vectors (Rocchio: plus the question's vector);
- coord, coordidf: the share of the question's content words (crudely stemmed) a memory's
  text holds, plain and idf-weighted (coordination level);
- kwvec: cosine with the embedding of the question's content words alone;
- ctxboth, ctxnext: the turn embedded with the opening words of the turns before and
  after it, or of the turn after only;
- loglen, asks, qterms: priors of the memory (log of its words; 1 when it asks something)
  and of the question (log of its content words: to multiply with a signal);
- sessmax, sesstop3, near1, near3, sesscount: the cluster hypothesis, from the default's
  scores over the pool (relative, 0-1): the best and mean best-3 score of the other
  candidates of its session, the best within 1 and 3 turns of it, log of their number;
- ctxother: the turn embedded as ingest embeds it, but with the opening words of the last
  earlier turn by another speaker (the message it answers) in place of the turn just
  before (they differ where one person sends several messages in a row).
With RANK_EXTRA_LIGHT=1 only `ctxown` is dumped, the turn before cut to each of LIGHT's
lengths; with RANK_EXTRA_CENTRE=1 only `centred0/1/2/5`, the cosine in a space centred on
the store's turns (their mean removed, and their 0/1/2/5 main directions: "all but the top");
RANK_EXTRA_SOFT=1, RANK_EXTRA_BURST=1 and RANK_EXTRA_VIEWS=1 dump only the passage and
word-matching columns, the burst columns and other views of question and turn (each
described where its names are listed).
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
    "nextcos", "ctxown", "vprf3", "vprf5", "vprf10", "rocchio3", "rocchio5",
    "coord", "coordidf", "kwvec", "ctxboth", "ctxnext", "loglen", "asks", "qterms",
    "sessmax", "sesstop3", "near1", "near3", "sesscount", "ctxother",
)  # fmt: skip
PRF_DOCS = 3  # best candidates read for feedback words
PRF_WORDS = 8  # feedback words searched
CONTEXT_WORDS = int(os.environ.get("RANK_EXTRA_CONTEXT_WORDS", "0"))  # 0: the whole turn


def _opening(text: str, words: int = CONTEXT_WORDS) -> str:
    """The turn's opening `words` words (all when 0)."""
    return " ".join(text.split()[:words]) if words else text


# RANK_EXTRA_LIGHT=1: only the own-first contextual cosine, the turn before cut to each of
# these lengths (what shorter context costs in recall; ingest embeds less text).
LIGHT = (10, 15, 20, 30)


def light() -> bool:
    """Whether RANK_EXTRA_LIGHT asks for the light columns only."""
    return bool(os.environ.get("RANK_EXTRA_LIGHT"))


# RANK_EXTRA_CENTRE=1: only cosines in a space centred on the store's own turns (the
# mean of their vectors removed; "all but the top": also their D main directions).
CENTRE = (0, 1, 2, 5)


def centre() -> bool:
    """Whether RANK_EXTRA_CENTRE asks for the centred cosines only."""
    return bool(os.environ.get("RANK_EXTRA_CENTRE"))


# RANK_EXTRA_SOFT=1: only passage-level and word-level matching columns:
# - maxp: the larger of the stored cosine and the best cosine of the turn's passages
#   (windows of PASSAGE words, every PASSAGE_STEP words; a turn no longer than PASSAGE
#   words has none, so it keeps its cosine), the passage embedded with the speaker;
# - chunkbest: the best passage cosine alone (the stored cosine for a short turn);
# - soft, softidf: for each content word of the question (names left out), the largest
#   cosine of its vector with the vectors of the turn's words, averaged (plainly, and
#   weighted by the word's idf among the store's turns): a translation model that lets
#   "dishes" meet "burger" where BM25 cannot;
# - softx: the same over the turn's words other than the question word itself and its
#   inflections (what BM25 does not already count).
SOFT = ("maxp", "chunkbest", "soft", "softidf", "softx")
PASSAGE = int(os.environ.get("RANK_EXTRA_PASSAGE", "100"))
PASSAGE_STEP = PASSAGE // 2


def soft() -> bool:
    """Whether RANK_EXTRA_SOFT asks for the passage and word-matching columns only."""
    return bool(os.environ.get("RANK_EXTRA_SOFT"))


# RANK_EXTRA_BURST=1: only columns of a turn's burst, the run of consecutive turns one
# speaker sends in a session before the other answers (real messaging splits one message
# into several; an LLM-written chat or a user-assistant chat alternates, so there a burst
# is the turn alone): the largest plain similarity, cosine and full-text (over the best)
# of the burst's other turns (0 alone), the cosine with the embedding of the whole burst
# joined in order (the turn's own cosine when alone), and log of the burst's size.
BURST = ("burstplain", "burstcos", "burstft", "burstvec", "burstsize")


def burst() -> bool:
    """Whether RANK_EXTRA_BURST asks for the burst columns only."""
    return bool(os.environ.get("RANK_EXTRA_BURST"))


# RANK_EXTRA_VIEWS=1: only other views of question and turn in the same model: the turn
# embedded without its context (plainvec), without context or speaker (barevec); the
# stored vector's cosine with the whole question, the names it asks about left in (qfull).
# - sentmax: the best cosine of the turn's sentences (each embedded with the speaker) for
#   a turn of 2+ sentences and at most SENTENCE_TURN words, the stored cosine otherwise;
#   sentmaxv: the larger of it and the stored cosine.
VIEWS = ("plainvec", "barevec", "qfull", "sentmax", "sentmaxv")
SENTENCE_TURN = 100
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def views() -> bool:
    """Whether RANK_EXTRA_VIEWS asks for the view columns only."""
    return bool(os.environ.get("RANK_EXTRA_VIEWS"))


def columns() -> tuple[str, ...]:
    """The names of the columns extra_rows gives."""
    if views():
        return VIEWS
    if burst():
        return BURST
    if soft():
        return SOFT
    if centre():
        return tuple(f"centred{d}" for d in CENTRE)
    return tuple(f"ctxown{n}" for n in LIGHT) if light() else EXTRA


_SPACES: dict[Any, tuple[Any, Any]] = {}


def _turn_space(ctx: SearchContext) -> tuple[Any, Any]:
    """The mean of the store's turn vectors and their main directions (rows, by variance)."""
    key = id(ctx.store)
    if key not in _SPACES:
        ids = [n.id for n in ctx.store.iter_nodes(ctx.space, "episode")]
        vectors = ctx.store.get_vectors(ids)
        rows = np.asarray([vectors[i] for i in ids if i in vectors], dtype=np.float64)
        mean = rows.mean(axis=0)
        _, _, directions = np.linalg.svd(rows - mean, full_matrices=False)
        _SPACES[key] = (mean, directions[: max(CENTRE)])
    return _SPACES[key]


def centre_rows(ctx: SearchContext, found: Relevance, ids: list[int]) -> np.ndarray:
    """One column per D in CENTRE: cosine of question and memory once the store's mean turn
    vector and its D main directions are removed from both."""
    out = np.zeros((len(ids), len(CENTRE)), dtype=np.float32)
    if found.fp.vector is None:
        return out
    mean, directions = _turn_space(ctx)
    vectors = ctx.store.get_vectors(ids)
    for col, d in enumerate(CENTRE):
        top = directions[:d]

        def cut(v: Any, top: Any = top) -> Any:
            x = np.asarray(v, dtype=np.float64) - mean
            x = x - top.T @ (top @ x) if len(top) else x
            return x / (np.linalg.norm(x) or 1.0)

        q = cut(found.fp.vector)
        for row, i in enumerate(ids):
            if i in vectors:
                out[row, col] = float(cut(vectors[i]) @ q)
    return out


def light_rows(
    ctx: SearchContext, found: Relevance, ids: list[int], cache: dict[Any, Any]
) -> np.ndarray:
    """One column per LIGHT length: cosine with the turn embedded own text first."""
    cols = []
    for n in LIGHT:
        vectors = _contextual(ctx, found, ids, cache.setdefault(n, {}), own_first=True, words=n)
        cols.append([float(vectors[i] @ found.fp.vector) if i in vectors else 0.0 for i in ids])
    return np.asarray(cols, dtype=np.float32).T.reshape(len(ids), len(LIGHT))


def extra_rows(
    ctx: SearchContext, found: Relevance, ids: list[int], cache: dict[int, Any]
) -> np.ndarray:
    """One row of EXTRA per memory in `ids`; `cache` keeps contextual vectors per node."""
    if light():
        return light_rows(ctx, found, ids, cache)
    if centre():
        return centre_rows(ctx, found, ids)
    if soft():
        return soft_rows(ctx, found, ids, cache)
    if burst():
        return burst_rows(ctx, found, ids, cache)
    if views():
        return view_rows(ctx, found, ids, cache)
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
    vprf = {m: _vector_feedback(ctx, found, ids, m) for m in (3, 5, 10)}
    roc = {m: _vector_feedback(ctx, found, ids, m, query=1.0) for m in (3, 5)}
    coord, coordidf = _coordination(ctx, found, ids)
    kw = _keyword_cosine(ctx, found, ids)
    both = _around(ctx, found, ids, after, cache, True)
    nxt = _around(ctx, found, ids, after, cache, False)
    priors = _priors(found, ids)
    cluster = _cluster(found, ids)
    answered = _answered(ctx, found, ids, cache)
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
                     else 0.0, vprf[3].get(i, 0.0), vprf[5].get(i, 0.0),
                     vprf[10].get(i, 0.0), roc[3].get(i, 0.0), roc[5].get(i, 0.0),
                     coord.get(i, 0.0), coordidf.get(i, 0.0), kw.get(i, 0.0),
                     both.get(i, 0.0), nxt.get(i, 0.0), *priors[i], *cluster[i],
                     answered.get(i, 0.0)])  # fmt: skip
    return np.asarray(rows, dtype=np.float32).reshape(len(ids), len(EXTRA))


def _contextual(
    ctx: SearchContext,
    found: Relevance,
    ids: list[int],
    cache: dict[Any, Any],
    own_first: bool = False,
    words: int = CONTEXT_WORDS,
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
            other = "" if prev is None else embedding_text(_opening(prev.text, words), prev.speaker)
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


def _vector_feedback(
    ctx: SearchContext, found: Relevance, ids: list[int], m: int, query: float = 0.0
) -> dict[int, float]:
    """Cosine of each memory's stored vector with the centroid of the best `m` candidates'
    vectors (by the default's score), plus `query` x the question's vector (Rocchio)."""
    if found.fp.vector is None:
        return {}
    best = [i for i, _ in ranked(found.scores)[:m]]
    vectors = ctx.store.get_vectors(list(dict.fromkeys([*ids, *best])))
    top = [vectors[i] for i in best if i in vectors]
    if not top:
        return {}
    centre = np.mean(top, axis=0) + query * found.fp.vector
    centre = centre / (np.linalg.norm(centre) or 1.0)
    return {i: float(vectors[i] @ centre) for i in ids if i in vectors}


def _stem(word: str) -> str:
    return word[:5]


_DF: dict[Any, tuple[dict[str, int], int]] = {}


def _document_frequency(ctx: SearchContext) -> tuple[dict[str, int], int]:
    key = id(ctx.store)
    if key not in _DF:
        df: Counter[str] = Counter()
        n = 0
        db = getattr(ctx.store, "db")  # noqa: B009 - the bench reads SQLite stores only
        for (text,) in db.execute("SELECT text FROM nodes WHERE kind = 'episode'"):
            n += 1
            df.update({_stem(w) for w in re.findall(r"\w+", (text or "").lower())})
        _DF[key] = (dict(df), n)
    return _DF[key]


def _coordination(
    ctx: SearchContext, found: Relevance, ids: list[int]
) -> tuple[dict[int, float], dict[int, float]]:
    """The share of the question's distinct content words (crudely stemmed) a memory's
    text holds: plain, and weighted by each word's idf."""
    from memcli.store.search import query_terms

    terms = {_stem(t) for t in query_terms(found.fp.query)}
    if not terms:
        return {}, {}
    df, n = _document_frequency(ctx)
    idf = {t: float(np.log((n + 1) / (df.get(t, 0) + 0.5))) for t in terms}
    total = sum(idf.values()) or 1.0
    plain, weighted = {}, {}
    for i in ids:
        node = found.signals.nodes.get(i)
        if node is None:
            continue
        held = {_stem(w) for w in re.findall(r"\w+", node.text.lower())} & terms
        plain[i] = len(held) / len(terms)
        weighted[i] = sum(idf[t] for t in held) / total
    return plain, weighted


def _keyword_cosine(ctx: SearchContext, found: Relevance, ids: list[int]) -> dict[int, float]:
    """Cosine with the embedding of the question's content words alone."""
    from memcli.store.search import query_terms

    if ctx.embedder is None:
        return {}
    text = " ".join(query_terms(found.fp.query))
    if not text:
        return {}
    vector = ctx.embedder.embed([text])[0]
    vectors = ctx.store.get_vectors(ids)
    return {i: float(v @ vector) for i, v in vectors.items()}


def _around(
    ctx: SearchContext, found: Relevance, ids: list[int], after: dict[int, int],
    cache: dict[Any, Any], with_before: bool,
) -> dict[int, float]:  # fmt: skip
    """Cosine with the embedding of the memory's text, the opening 30 words of the turn
    before (`with_before`) and of the turn after."""
    from memcli.models import turn_embedding_text

    sig, fp = found.signals, found.fp
    if ctx.embedder is None or fp.vector is None:
        return {}
    key = "both" if with_before else "next"
    todo = [i for i in ids if (i, key) not in cache and i in sig.nodes]
    missing = [a for a in after.values() if a not in sig.nodes]
    sig.nodes.update(ctx.store.nodes_by_ids(missing))
    texts = []
    for i in todo:
        node = sig.nodes[i]
        prev = sig.nodes.get(sig.before.get(i, -1))
        nxt = sig.nodes.get(after.get(i, -1))
        text = turn_embedding_text(
            node.text, node.speaker, (prev.text, prev.speaker) if prev and with_before else None
        )
        if nxt is not None:
            text += "\n" + embedding_text(" ".join(nxt.text.split()[:30]), nxt.speaker)
        texts.append(text)
    if todo:
        for i, v in zip(todo, ctx.embedder.embed(texts), strict=True):
            cache[i, key] = v
    return {i: float(cache[i, key] @ fp.vector) for i in ids if (i, key) in cache}


def _priors(found: Relevance, ids: list[int]) -> dict[int, tuple[float, float, float]]:
    """(log words, asks, log of the question's content words) per memory."""
    from memcli.store.search import query_terms

    terms = float(np.log1p(len(query_terms(found.signals.question))))
    out = {}
    for i in ids:
        node = found.signals.nodes.get(i)
        text = node.text if node is not None else ""
        out[i] = (float(np.log1p(len(text.split()))), float("?" in text), terms)
    return out


def _cluster(found: Relevance, ids: list[int]) -> dict[int, tuple[float, ...]]:
    """The cluster-hypothesis columns (see the module) per memory."""
    raw = np.array([found.scores.get(i, 0.0) for i in ids])
    span = (raw.max() - raw.min()) if len(raw) else 0.0
    score = (raw - raw.min()) / span if span else np.zeros(len(ids))
    nodes = found.signals.nodes
    where = [(nodes[i].session, nodes[i].seq) if i in nodes else (None, None) for i in ids]
    out: dict[int, tuple[float, ...]] = {}
    for a, i in enumerate(ids):
        session, seq = where[a]
        same = [b for b in range(len(ids)) if b != a and session and where[b][0] == session]
        best = sorted((score[b] for b in same), reverse=True)
        dist = [(abs((where[b][1] or 0) - (seq or 0)), score[b]) for b in same]
        out[i] = (best[0] if best else 0.0, float(np.mean(best[:3])) if best else 0.0,
                  max((s for d, s in dist if d <= 1), default=0.0),
                  max((s for d, s in dist if d <= 3), default=0.0),
                  float(np.log1p(len(same))))  # fmt: skip
    return out


def _answered(
    ctx: SearchContext, found: Relevance, ids: list[int], cache: dict[Any, Any]
) -> dict[int, float]:
    """Cosine with the turn embedded beside the last earlier turn by another speaker."""
    from memcli.models import turn_embedding_text

    sig, fp = found.signals, found.fp
    if ctx.embedder is None or fp.vector is None:
        return {}
    todo = [i for i in ids if (i, "other") not in cache and i in sig.nodes]
    texts = []
    for i in todo:
        node = sig.nodes[i]
        key = ("session", node.session)
        if key not in cache:
            cache[key] = ctx.store.session_turns(ctx.space, node.session or "")
        turns = cache[key]
        at = next((n for n, t in enumerate(turns) if t.id == i), 0)
        other = next((t for t in reversed(turns[:at]) if t.speaker != node.speaker), None)
        before = (other.text, other.speaker) if other is not None else None
        texts.append(turn_embedding_text(node.text, node.speaker, before))
    if todo:
        for i, v in zip(todo, ctx.embedder.embed(texts), strict=True):
            cache[i, "other"] = v
    return {i: float(cache[i, "other"] @ fp.vector) for i in ids if (i, "other") in cache}


def _passages(text: str) -> list[str]:
    """Windows of PASSAGE words every PASSAGE_STEP words (none for a short text)."""
    words = text.split()
    if len(words) <= PASSAGE:
        return []
    starts = range(0, max(len(words) - PASSAGE_STEP, 1), PASSAGE_STEP)
    return [" ".join(words[s : s + PASSAGE]) for s in starts]


_WORDS: dict[Any, tuple[dict[str, int], Any, dict[str, float]]] = {}


def _word_space(ctx: SearchContext) -> tuple[dict[str, int], Any, dict[str, float]]:
    """The store's word rows, its matrix and each word's idf among the turns."""
    from memcli.text import vocabulary_words

    key = id(ctx.store)
    if key not in _WORDS:
        vocabulary, matrix = ctx.store.word_matrix(ctx.space)
        df: Counter[str] = Counter()
        n = 0
        for node in ctx.store.iter_nodes(ctx.space, "episode"):
            n += 1
            df.update(vocabulary_words(node.text))
        idf = {w: float(np.log((n + 1) / (c + 0.5))) for w, c in df.items()}
        _WORDS[key] = ({w: r for r, w in enumerate(vocabulary)}, matrix, idf)
    return _WORDS[key]


def soft_rows(
    ctx: SearchContext, found: Relevance, ids: list[int], cache: dict[Any, Any]
) -> np.ndarray:
    """The SOFT columns (see above) of each memory in `ids`."""
    from memcli.retrieval.related import inflection, question_words
    from memcli.text import vocabulary_words

    out = np.zeros((len(ids), len(SOFT)), dtype=np.float32)
    fp, sig = found.fp, found.signals
    if fp.vector is None or ctx.embedder is None:
        return out
    todo = [i for i in ids if (i, "passages") not in cache and i in sig.nodes]
    texts, owners = [], []
    for i in todo:
        node = sig.nodes[i]
        parts = _passages(node.text)
        cache[i, "passages"] = []
        for part in parts:
            texts.append(embedding_text(part, node.speaker))
            owners.append(i)
    if texts:
        for i, v in zip(owners, ctx.embedder.embed(texts), strict=True):
            cache[i, "passages"].append(v)
    rows, matrix, idf = _word_space(ctx)
    asked = question_words(found.signals.question)
    qv = {}
    if matrix is not None and asked:
        known = ctx.store.word_vectors(ctx.space, asked)
        unseen = [w for w in asked if w not in known]
        if unseen:
            known.update(zip(unseen, ctx.embedder.embed(unseen), strict=True))
        qv = {w: np.asarray(known[w], dtype=np.float32) for w in asked}
    top_idf = max(idf.values(), default=1.0)
    for r, i in enumerate(ids):
        cos = fp.cosine.get(i, 0.0)
        chunks = [float(v @ fp.vector) for v in cache.get((i, "passages"), [])]
        out[r, 0] = max([cos, *chunks])
        out[r, 1] = max(chunks) if chunks else cos
        node = sig.nodes.get(i)
        if node is None or not qv:
            continue
        mine = [w for w in vocabulary_words(node.text) if w in rows]
        if not mine:
            continue
        block = matrix[[rows[w] for w in mine]]
        best, weighted, other, total = [], 0.0, [], 0.0
        for w, v in qv.items():
            sims = block @ v
            b = float(sims.max())
            best.append(b)
            weight = idf.get(w, top_idf)
            weighted += weight * b
            total += weight
            keep = [k for k, m in enumerate(mine) if m != w and not inflection(m, w)]
            other.append(float(sims[keep].max()) if keep else 0.0)
        out[r, 2] = float(np.mean(best))
        out[r, 3] = weighted / (total or 1.0)
        out[r, 4] = float(np.mean(other))
    return out


def _bursts(ctx: SearchContext, session: str, cache: dict[Any, Any]) -> dict[int, list[Any]]:
    """Each turn of a session -> the turns of its burst, in order (cached per session)."""
    key = ("bursts", session)
    if key not in cache:
        runs: list[list[Any]] = []
        for turn in ctx.store.session_turns(ctx.space, session):
            if runs and runs[-1][-1].speaker == turn.speaker:
                runs[-1].append(turn)
            else:
                runs.append([turn])
        cache[key] = {t.id: run for run in runs for t in run}
    return cache[key]


def burst_rows(
    ctx: SearchContext, found: Relevance, ids: list[int], cache: dict[Any, Any]
) -> np.ndarray:
    """The BURST columns (see above) of each memory in `ids`."""
    fp, sig = found.fp, found.signals
    out = np.zeros((len(ids), len(BURST)), dtype=np.float32)
    runs: dict[int, list[Any]] = {}
    for i in ids:
        node = sig.nodes.get(i)
        if node is not None and node.session:
            runs[i] = _bursts(ctx, node.session, cache).get(i, [])
    mates = {t.id for run in runs.values() for t in run}
    fp.extend(ctx, mates)
    todo = [i for i, run in runs.items() if len(run) > 1 and (i, "burst") not in cache]
    if todo and ctx.embedder is not None:
        texts = []
        for i in todo:
            run = runs[i]
            texts.append(embedding_text(" ".join(t.text for t in run), run[0].speaker))
        for i, v in zip(todo, ctx.embedder.embed(texts), strict=True):
            cache[i, "burst"] = v
    for r, i in enumerate(ids):
        run = runs.get(i, [])
        others = [t.id for t in run if t.id != i]
        cos = fp.cosine.get(i, 0.0)
        if others:
            out[r, 0] = max(sig.plain(j) for j in others)
            out[r, 1] = max(fp.cosine.get(j, 0.0) for j in others)
            out[r, 2] = max(fp.words.get(j, 0.0) for j in others) / sig.scale
        v = cache.get((i, "burst"))
        out[r, 3] = float(v @ fp.vector) if v is not None and fp.vector is not None else cos
        out[r, 4] = float(np.log(max(len(run), 1)))
    return out


def view_rows(
    ctx: SearchContext, found: Relevance, ids: list[int], cache: dict[Any, Any]
) -> np.ndarray:
    """The VIEWS columns (see above) of each memory in `ids`."""
    fp, sig = found.fp, found.signals
    out = np.zeros((len(ids), len(VIEWS)), dtype=np.float32)
    if fp.vector is None or ctx.embedder is None:
        return out
    for key, make in (("plain", lambda n: embedding_text(n.text, n.speaker)),
                      ("bare", lambda n: n.text)):  # fmt: skip
        todo = [i for i in ids if (i, key) not in cache and i in sig.nodes]
        if todo:
            texts = [make(sig.nodes[i]) for i in todo]
            for i, v in zip(todo, ctx.embedder.embed(texts), strict=True):
                cache[i, key] = v
    todo = [i for i in ids if (i, "sentences") not in cache and i in sig.nodes]
    texts, owners = [], []
    for i in todo:
        node = sig.nodes[i]
        cache[i, "sentences"] = []
        parts = [p for p in _SENTENCE.split(node.text) if p.strip()]
        if len(parts) > 1 and len(node.text.split()) <= SENTENCE_TURN:
            texts += [embedding_text(p, node.speaker) for p in parts]
            owners += [i] * len(parts)
    if texts:
        for i, v in zip(owners, ctx.embedder.embed(texts), strict=True):
            cache[i, "sentences"].append(v)
    whole = ctx.embedder.embed([sig.question])[0]
    vectors = ctx.store.get_vectors(ids)
    for r, i in enumerate(ids):
        for c, key in enumerate(("plain", "bare")):
            v = cache.get((i, key))
            out[r, c] = float(v @ fp.vector) if v is not None else 0.0
        out[r, 2] = float(vectors[i] @ whole) if i in vectors else 0.0
        cos = fp.cosine.get(i, 0.0)
        parts = [float(v @ fp.vector) for v in cache.get((i, "sentences"), [])]
        out[r, 3] = max(parts) if parts else cos
        out[r, 4] = max([cos, *parts])
    return out
