"""Candidate pools extended through derived memories, for judging them offline.

    nice -n 5 .venv/bin/python -m tests.bench.derived_dump --out .bench/derived.npz \
        [--cache .bench/stores] [--genres ...] [--segments 5] [--concepts 3] [--entities 3]

For every dev question, the default's pool (as tests/bench/rank_dump.py dumps it) plus the
turns a derived memory of the consolidated store leads to: the members of the question's
best topic segments (a segment's digest: all its turns' words in a full-text table of
segments alone, and its vector), the turns that say its best-matching concepts (key
phrases said in two sessions or more: an activity across sessions) and the turns that
name its best-matching entities (a named thing's timeline). Every row gets the seven
signals of the default and the derived columns DERIVED (0 where a turn has no such
memory); `in_pool` tells the default's own candidates from the added ones. The derived
memories' full-text tables are temporary tables of the read connection, so the store's
own statistics are not touched. tests/bench/derived_fit.py fits and judges.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memcli.config import Config
from memcli.eval.store_cache import built_store, code_hash
from memcli.memory import Memory
from memcli.retrieval import SearchContext
from memcli.retrieval.firstpass import ranked
from memcli.retrieval.params import HybridParams
from memcli.retrieval.relevance import Relevance
from memcli.retrieval.signals import SIGNALS
from memcli.store.sqlite.fts import fts_query
from tests.bench.genres import CACHE, DATA, GENRES, load_genre, shared_models
from tests.bench.rank_dump import save

DERIVED = (
    "seg_bm",
    "seg_cos",
    "seg_cen",
    "seg_rr",
    "seg_size",
    "con_bm",
    "con_n",
    "ent_bm",
    "ent_n",
    "in_pool",
    "via_seg",
    "via_con",
    "via_ent",
    "ent_qcos",
    "ent_wcos",
    "ent_tlq",
    "ent_tlw",
    "via_entv",
    "thr",
    "via_thr",
)
THREAD_LINKS = 3  # a segment's most similar segments of other sessions (an activity's thread)
THREAD_LEAST = 0.6  # least cosine between their turns' centroids
KINDS = ("seg", "con", "ent")


@dataclass
class Structures:
    """A consolidated store's derived memories: each node's turns, text and vector."""

    turns: dict[str, dict[int, list[int]]] = field(default_factory=dict)  # kind -> node -> turns
    vectors: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    of_turn: dict[str, dict[int, list[int]]] = field(default_factory=dict)  # kind -> turn -> nodes
    centroid: dict[int, np.ndarray] = field(default_factory=dict)  # segment -> mean turn vector
    timeline: dict[int, np.ndarray] = field(default_factory=dict)  # entity -> mean mention vector
    links: dict[int, list[int]] = field(default_factory=dict)  # segment -> its thread's others


def _edges(conn: Any, kind: str) -> list[tuple[int, int]]:
    return [
        (int(a), int(b))
        for a, b in conn.execute(
            "SELECT e.src, e.dst FROM edges e JOIN nodes n ON n.id = e.src"
            " WHERE e.type = ? AND n.kind = 'episode' ORDER BY n.seq, n.id",
            [kind],
        )
    ]


def read_structures(mem: Memory) -> Structures:
    """Segments (PART_OF), concepts (HAS_CONCEPT) and entities (MENTIONS) with their turns,
    and a temporary full-text table of each kind's texts."""
    conn, found = mem.store.conn, Structures()
    for kind, edge in (("seg", "PART_OF"), ("con", "HAS_CONCEPT"), ("ent", "MENTIONS")):
        by_node: dict[int, list[int]] = defaultdict(list)
        by_turn: dict[int, list[int]] = defaultdict(list)
        for turn, node in _edges(conn, edge):
            by_node[node].append(turn)
            by_turn[turn].append(node)
        found.turns[kind], found.of_turn[kind] = dict(by_node), dict(by_turn)
        found.vectors[kind] = mem.store.get_vectors(list(by_node))
    texts = dict(conn.execute("SELECT id, text FROM nodes WHERE kind = 'episode'").fetchall())
    speakers = dict(conn.execute("SELECT id, speaker FROM nodes WHERE kind = 'episode'"))
    turn_vectors = mem.store.get_vectors(list(texts))
    for seg, members in found.turns["seg"].items():
        mean = np.mean([turn_vectors[t] for t in members if t in turn_vectors], axis=0)
        found.centroid[seg] = mean / (np.linalg.norm(mean) or 1.0)
    found.links = _threads(mem, found)
    for ent, members in found.turns["ent"].items():
        mean = np.mean([turn_vectors[t] for t in members if t in turn_vectors], axis=0)
        found.timeline[ent] = mean / (np.linalg.norm(mean) or 1.0)
    labels = dict(conn.execute("SELECT id, text FROM nodes WHERE kind IN ('concept', 'entity')"))
    for kind in KINDS:
        conn.execute(f"DROP TABLE IF EXISTS temp.d_{kind}")
        conn.execute(
            f"CREATE VIRTUAL TABLE temp.d_{kind} USING fts5(text, "
            "tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        rows = []
        for node, members in found.turns[kind].items():
            if kind == "seg":
                text = " ".join(f"{speakers[t] or ''}: {texts[t]}" for t in members)
            else:
                text = str(labels.get(node, "")).replace("_", " ")
            rows.append((node, text))
        conn.executemany(f"INSERT INTO temp.d_{kind}(rowid, text) VALUES (?, ?)", rows)
    return found


def _threads(mem: Memory, st: Structures) -> dict[int, list[int]]:
    """Each segment's THREAD_LINKS most similar segments of other sessions (cosine of their
    turns' centroids at least THREAD_LEAST): RELATED links without a model."""
    segs = list(st.centroid)
    session = dict(mem.store.conn.execute("SELECT id, session FROM nodes WHERE kind = 'segment'"))
    matrix = np.stack([st.centroid[s] for s in segs])
    sims = matrix @ matrix.T
    out: dict[int, list[int]] = {}
    for n, seg in enumerate(segs):
        order = np.argsort(-sims[n])
        out[seg] = [
            segs[j]
            for j in order
            if session[segs[j]] != session[seg] and sims[n, j] >= THREAD_LEAST
        ][:THREAD_LINKS]
    return out


def bm25(conn: Any, kind: str, query: str) -> dict[int, float]:
    """BM25 (higher is better) of the query's words in each derived node of a kind."""
    match = fts_query(query)
    if not match:
        return {}
    rows = conn.execute(
        f"SELECT rowid, -bm25(d_{kind}) FROM temp.d_{kind} WHERE d_{kind}"
        " MATCH ? ORDER BY rank LIMIT 500",
        [match],
    )
    return {int(i): float(s) for i, s in rows}


def _relative(scores: dict[int, float]) -> dict[int, float]:
    best = max(scores.values(), default=0.0)
    return {i: s / best for i, s in scores.items()} if best > 0 else {}


def derived_scores(mem: Memory, st: Structures, query: str, vector: Any) -> dict[str, Any]:
    """The question's score of every derived node: BM25 over the best of its kind, cosines."""
    conn = mem.store.conn
    out: dict[str, Any] = {k: _relative(bm25(conn, k, query)) for k in KINDS}
    out["seg_cos"] = {s: float(v @ vector) for s, v in st.vectors["seg"].items()}
    out["seg_cen"] = {s: float(v @ vector) for s, v in st.centroid.items()}
    fused = {s: 0.5 * out["seg"].get(s, 0.0) + 0.5 * c for s, c in out["seg_cos"].items()}
    out["seg_order"] = [s for s, _ in ranked(fused)]
    out["seg_fused"] = fused
    words = _word_vectors(mem, query)
    for name, table in (("ent_vec", st.vectors["ent"]), ("ent_tl", st.timeline)):
        out[name + "_q"] = {e: float(v @ vector) for e, v in table.items()}
        out[name + "_w"] = {
            e: max((float(v @ w) for w in words), default=0.0) for e, v in table.items()
        }
    return out


def _word_vectors(mem: Memory, query: str) -> list[np.ndarray]:
    """The vectors of the query's content words that are not names (memcli.retrieval.related)."""
    from memcli.retrieval.related import question_words

    asked = question_words(query)
    known = mem.store.word_vectors(mem.space, asked)
    unseen = [w for w in asked if w not in known]
    if unseen:
        known.update(zip(unseen, mem.embedder.embed(unseen), strict=True))
    return [np.asarray(known[w], dtype=np.float32) for w in asked]


def expansion(st: Structures, scores: dict[str, Any], args: argparse.Namespace) -> dict[int, int]:
    """turn -> how it was reached (1 a best segment, 2 a best concept, 4 a best entity)."""
    via: dict[int, int] = defaultdict(int)
    for seg in scores["seg_order"][: args.segments]:
        for t in st.turns["seg"][seg]:
            via[t] |= 1
    for kind, bit, count in (("con", 2, args.concepts), ("ent", 4, args.entities)):
        for node, _ in ranked(scores[kind])[:count]:
            for t in st.turns[kind][node][: args.per_node]:
                via[t] |= bit
    for seg in scores["seg_order"][: args.segments]:
        for other in st.links.get(seg, []):
            for t in st.turns["seg"][other]:
                via[t] |= 16
    for node, _ in ranked(scores["ent_vec_w"])[: args.entities]:
        for t in st.turns["ent"][node][: args.per_node]:
            via[t] |= 8
    return dict(via)


def derived_row(
    t: int, st: Structures, sc: dict[str, Any], pool: set[int], via: int
) -> list[float]:
    """The DERIVED columns of one turn."""
    segs = st.of_turn["seg"].get(t, [])
    seg = segs[0] if segs else None
    rank = {s: n for n, s in enumerate(sc["seg_order"])}
    fused = sc["seg_fused"]
    cons, ents = st.of_turn["con"].get(t, []), st.of_turn["ent"].get(t, [])
    return [
        sc["seg"].get(seg, 0.0),
        sc["seg_cos"].get(seg, 0.0),
        sc["seg_cen"].get(seg, 0.0),
        1.0 / (10 + rank[seg]) if seg in rank else 0.0,
        float(np.log1p(len(st.turns["seg"].get(seg, [])))),
        max((sc["con"].get(c, 0.0) for c in cons), default=0.0),
        float(np.log1p(len(cons))),
        max((sc["ent"].get(e, 0.0) for e in ents), default=0.0),
        float(np.log1p(len(ents))),
        float(t in pool),
        float(via & 1),
        float(bool(via & 2)),
        float(bool(via & 4)),
        *(
            max((sc[name].get(e, 0.0) for e in ents), default=0.0)
            for name in ("ent_vec_q", "ent_vec_w", "ent_tl_q", "ent_tl_w")
        ),
        float(bool(via & 8)),
        max((fused[o] for o in st.links.get(seg, []) if o in fused), default=0.0),
        float(bool(via & 16)),
    ]


def question_rows(
    mem: Memory, st: Structures, question: str, args: argparse.Namespace
) -> dict[str, Any]:
    """One question's extended pool with every column."""
    ctx = SearchContext(mem.store, mem.space, mem.embedder, mem.cfg.retrieval)
    found = Relevance.of(ctx, question, ctx.params("hybrid", HybridParams).candidates)
    pool = set(found.rows)
    sc = derived_scores(mem, st, found.fp.query, found.fp.vector)
    via = expansion(st, sc, args)
    ids = list(dict.fromkeys([*found.rows, *via]))
    found.score(ids)
    ids = [i for i in ids if i in found.rows]
    nodes = found.signals.nodes
    lex = {i: n for n, (i, _) in enumerate(ranked(found.fp.lexical))}
    cos = {i: n for n, (i, _) in enumerate(ranked(found.fp.cosine))}
    x = [
        [found.rows[i][s] for s in SIGNALS] + derived_row(i, st, sc, pool, via.get(i, 0))
        for i in ids
    ]
    return {
        "ids": ids,
        "refs": [nodes[i].ref or "" for i in ids],
        "x": np.asarray(x, dtype=np.float32),
        "lex_rank": [lex.get(i, 9999) for i in ids],
        "cos_rank": [cos.get(i, 9999) for i in ids],
        "sessions": [nodes[i].session or "" for i in ids],
        "seqs": [nodes[i].seq if nodes[i].seq is not None else -1 for i in ids],
        "segment": [(st.of_turn["seg"].get(i) or [-1])[0] for i in ids],
        "digests": _digests(sc, args.segments),
    }


def _digests(sc: dict[str, Any], count: int) -> list[list[float]]:
    """The best segments' (id, BM25 over the best, cosine, centroid cosine, rank)."""
    return [
        [float(s), sc["seg"].get(s, 0.0), sc["seg_cos"][s], sc["seg_cen"].get(s, 0.0), float(n)]
        for n, s in enumerate(sc["seg_order"][:count])
    ]


def dump(args: argparse.Namespace) -> dict[str, Any]:
    cfg = Config()
    if args.embedding:
        embedding = dataclasses.replace(cfg.embedding, model=args.embedding)
        cfg = dataclasses.replace(cfg, embedding=embedding)
    shared = shared_models(cfg)
    out: list[dict[str, Any]] = []
    for name in args.genres.split(","):
        genre = load_genre(name, str(DATA / GENRES[name]))
        for conv in genre.bench.conversations:
            db, _ = built_store(conv, cfg, args.cache / name, shared, code=code_hash())
            mem = Memory(dataclasses.replace(cfg, db=str(db), space="default"), **shared)
            started = time.perf_counter()
            try:
                st = read_structures(mem)
                for index, qa in enumerate(conv.questions):
                    row = question_rows(mem, st, qa["question"], args)
                    label = genre.bench.labels.get(qa["category"], str(qa["category"]))
                    row.update(
                        genre=name,
                        conversation=conv.name,
                        index=index,
                        question=qa["question"],
                        gold=list(qa["gold"]),
                        category=label,
                    )
                    out.append(row)
            finally:
                mem.close()
            print(f"{name} {conv.name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return {"signals": [*SIGNALS, *DERIVED], "questions": out}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--genres", default=",".join(GENRES))
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--embedding", default="", help="stores built with this model")
    parser.add_argument("--segments", type=int, default=5)
    parser.add_argument("--concepts", type=int, default=3)
    parser.add_argument("--entities", type=int, default=3)
    parser.add_argument("--per-node", type=int, default=40, help="turns per concept/entity")
    args = parser.parse_args(argv)
    save(dump(args), args.out)


if __name__ == "__main__":
    main()
