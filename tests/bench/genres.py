"""Retrieval recall over the three dev genres in one run, with noise bands.

    nice -n 5 .venv/bin/python -m tests.bench.genres \
        --variant base=hybrid --variant norole=hybrid:role=0 --baseline base \
        [--genres locomo,beam,realtalk] [--save run.json] [--compare old.json] \
        [--fires] [--logo] [--rebuild] [--out report.md]

Genres: LoCoMo dev (social chat between two people), beam-dev (long user-assistant chats)
and realtalk-dev (real messaging between people), read by the loaders `memcli eval locomo`
and `memcli eval chats` use, each conversation built into its own store by ingest and
consolidation without an LLM (`--consolidate`), and every question scored by the same
function and recall as those commands. Stores are built once into --cache (memcli.eval.
store_cache: keyed by the input files, the build settings and the code that builds stores)
and reused; --rebuild forces new ones.

A variant is NAME=STRATEGY[:KEY=VALUE,...] (memcli.eval.variants), the keys being
retrieval settings, a strategy's parameters (`hybrid`'s switches also by the lab's short
names, `broad=off`) or the one patch of the index, `context_weight` (tests/bench/
genre_patches.py). Variants are asked question by question in turn, so their latencies
are measured side by side. Every difference against --baseline, per genre and for the
macro mean over genres, comes with a 95% paired bootstrap interval over questions
(memcli.eval.bootstrap); `*` marks one that excludes 0. --save keeps every question's
recall per variant; --compare adds a saved run's variants (paired by question), so a later
run is judged against it. --fires counts, per genre, the questions each English pattern and
cue of the default path fires on (the baseline variant's run). --logo picks, for each genre,
the variant best on the other two and reports it on the held-out one. --halves GENRE
compares the variants on each half of that genre's conversations.

A variant's `embedding=NAME` builds (and caches, keyed by it) its stores with that embedding
model, e.g. `--variant e5=hybrid:embedding=multilingual-e5-small`.
A variant asks the consolidated stores, or with `store=ingest` the same conversations'
stores as ingest left them (before any `consolidate`): `--variant before=hybrid:store=ingest
--variant after=hybrid --baseline before` measures what consolidation buys, paired
question by question. --types adds, per genre and question type, each variant's difference
from the baseline with its band.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from memcli.config import Config
from memcli.eval import chats, locomo
from memcli.eval.runner import Benchmark, Conversation, check_strategies, score_question
from memcli.eval.store_cache import built_store, code_hash
from memcli.eval.variants import Variant, parse_variant, with_overrides
from memcli.memory import Memory
from tests.bench import genre_fires, genre_report
from tests.bench.genre_patches import Probe, patched, split_overrides

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("MEMCLI_DEV_DATA") or ROOT.parent / "shared" / "data")
GENRES = {"locomo": "locomo-dev.json", "beam": "beam-dev", "realtalk": "realtalk-dev"}
CACHE = ROOT / ".bench" / "stores"
CONSOLIDATED, INGESTED = "consolidated", "ingest"
STORES = (CONSOLIDATED, INGESTED)  # a variant's `store=`: after consolidate, or before it


@dataclasses.dataclass
class Genre:
    """One genre's benchmark, as the eval commands read it."""

    name: str
    bench: Benchmark


def load_genre(name: str, path: str) -> Genre:
    """The benchmark of a genre: a LoCoMo file, or a directory of annotated chats."""
    bench = locomo.benchmark(path) if name == "locomo" else chats.benchmark([path])
    return Genre(name, bench)


@dataclasses.dataclass
class Prepared:
    """A variant ready to ask with: its settings and its patches."""

    variant: Variant
    cfg: Config
    patches: dict[str, str]
    store: str = CONSOLIDATED  # which store of a conversation it asks (STORES)

    @property
    def where(self) -> tuple[str, str]:
        """Which built store it asks: (store kind, embedding model that built it)."""
        return self.store, self.cfg.embedding.model


def prepare(cfg: Config, variants: list[Variant]) -> list[Prepared]:
    """Each variant's settings applied and checked before any work."""
    check_strategies([v.strategy for v in variants])
    out = []
    for variant in variants:
        settings, patches = split_overrides(variant.settings)
        store = settings.pop("store", CONSOLIDATED)
        if store not in STORES:
            raise SystemExit(f"variant {variant.name}: store={store}; choose from {STORES}")
        # embedding=NAME: stores built (and cached, keyed by it) with that embedding model
        embedding = dataclasses.replace(
            cfg.embedding, model=settings.pop("embedding", cfg.embedding.model)
        )
        retrieval = with_overrides(cfg.retrieval, settings, variant.strategy)
        replaced = dataclasses.replace(cfg, retrieval=retrieval, embedding=embedding)
        out.append(Prepared(variant, replaced, patches, store))
    return out


def _row(conv: Conversation, index: int, qa: dict[str, Any], scored: dict[str, Any],
         labels: Mapping[Any, str]) -> dict[str, Any]:  # fmt: skip
    """What is kept of one scored question."""
    return {
        "conversation": conv.name,
        "index": index,
        "question": qa["question"],
        "category": labels.get(qa["category"], str(qa["category"])),
        "recall": scored["recall"],
        "latency_s": round(scored["latency_s"], 5),
    }


def ask_conversation(
    genre: Genre, conv: Conversation, dbs: Mapping[tuple[str, str], Path],
    prepared: list[Prepared], ks: list[int], shared: Mapping[str, dict[str, Any]],
    probe: Probe | None = None,
) -> dict[str, list[dict[str, Any]]]:  # fmt: skip
    """Every variant's rows for one conversation's built stores ((store kind, embedding
    model) -> path; `shared`: the models per embedding model), asked question by question
    in turn; the probe (if any) records what fires for its variant."""
    mems: dict[str, Memory] = {}
    stores: dict[tuple[str, str], Any] = {}
    for p in prepared:
        models = shared[p.cfg.embedding.model]
        mem = Memory(_on(p.cfg, dbs[p.where]), stores.get(p.where), **models)
        mems[p.variant.name] = mem
        stores.setdefault(p.where, mem.store)
    rows: dict[str, list[dict[str, Any]]] = {p.variant.name: [] for p in prepared}
    try:
        for index, qa in enumerate(conv.questions):
            for p in prepared:
                key = (genre.name, conv.name, index)
                watch = (
                    probe.recording(key)
                    if probe and probe.variant == p.variant.name
                    else nullcontext()
                )
                with patched(p.patches), watch:
                    mem = mems[p.variant.name]
                    scored, _ = score_question(mem, conv, qa, p.variant.strategy, ks)
                rows[p.variant.name].append(_row(conv, index, qa, scored, genre.bench.labels))
    finally:
        for store in stores.values():
            store.close()
    return rows


def _on(cfg: Config, db: Path) -> Config:
    return dataclasses.replace(cfg, db=str(db), space="default")


def shared_models(cfg: Config) -> dict[str, Any]:
    """One embedder for every store, loaded before any timing; no chat model."""
    from memcli.llm import create_embedder

    embedder = create_embedder(cfg.embedding)
    if embedder is not None:
        embedder.embed(["warm-up"])
    return {"embedder": embedder, "chat": None}


def evaluate(
    genres: list[Genre], prepared: list[Prepared], cfg: Config, args: argparse.Namespace
) -> dict[str, Any]:
    """Build (or reuse) every store, ask every variant every question; the run's record."""
    # the run's settings with each variant's embedding model: what its stores are built with
    shared = {
        p.cfg.embedding.model: dataclasses.replace(cfg, embedding=p.cfg.embedding) for p in prepared
    }
    models = {name: shared_models(each) for name, each in shared.items()}
    code = code_hash()
    watched = args.baseline or prepared[0].variant.name
    probe = Probe(watched) if args.fires else None
    variants: dict[str, dict[str, Any]] = {
        p.variant.name: {"spec": p.variant.spec(), "genres": {}} for p in prepared
    }
    builds: dict[str, list[dict[str, Any]]] = {}
    for genre in genres:
        for p in prepared:
            variants[p.variant.name]["genres"][genre.name] = []
        for conv in genre.bench.conversations:
            started = time.perf_counter()
            dbs: dict[tuple[str, str], Path] = {}
            wheres = sorted({p.where for p in prepared}, key=lambda w: (STORES.index(w[0]), w))
            for kind, model in wheres:  # a consolidated store's build info holds its ingest's
                dbs[kind, model], built = built_store(
                    conv, shared[model], args.cache / genre.name, models[model], code=code,
                    rebuild=args.rebuild, consolidate=kind == CONSOLIDATED,
                )  # fmt: skip
                if (kind, model) == wheres[0]:
                    builds.setdefault(genre.name, []).append(built)
            ready = time.perf_counter()
            rows = ask_conversation(genre, conv, dbs, prepared, args.ks, models, probe)
            for name, got in rows.items():
                variants[name]["genres"][genre.name].extend(got)
            _log(f"{genre.name} {conv.name}: store {ready - started:.1f} s, "
                 f"{len(conv.questions)} questions x {len(prepared)} in "
                 f"{time.perf_counter() - ready:.1f} s")  # fmt: skip
            if probe is not None:
                watch = next(p for p in prepared if p.variant.name == probe.variant)
                db = dbs[watch.where]
                genre_fires.count_turns(
                    probe, genre.name, conv.name, db, models[watch.cfg.embedding.model]
                )
    return {"code_hash": code, "builds": builds, "variants": variants,
            "fires": genre_fires.fire_counts(probe, genres) if probe else None}  # fmt: skip


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _commit() -> str:
    """The checkout's commit, marked when files differ from it."""

    def git(*cmd: str) -> str:
        return subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True).stdout

    return git("rev-parse", "--short", "HEAD").strip() + (
        "+changes" if git("status", "--porcelain", "--untracked-files=no").strip() else ""
    )


def merge_saved(run: dict[str, Any], paths: list[str]) -> None:
    """Add the variants of saved runs to `run`; each must have asked the same questions."""
    for path in paths:
        saved = json.loads(Path(path).read_text(encoding="utf-8"))
        for name, variant in saved["variants"].items():
            if name in run["variants"]:
                raise SystemExit(f"{path}: variant {name!r} is also in this run; rename one")
            for genre, rows in run["genres_rows"].items():
                theirs = variant["genres"].get(genre)
                if theirs is None or _keys(theirs) != rows:
                    raise SystemExit(f"{path}: {name!r} did not ask this run's {genre} questions")
            run["variants"][name] = {**variant, "saved": f"{path} ({saved.get('commit')})"}
        if not run.get("fires"):  # a report from saved runs alone shows the first's counts
            run["fires"] = saved.get("fires")


def _keys(rows: list[dict[str, Any]]) -> list[tuple[str, int, str]]:
    return [(r["conversation"], r["index"], r["question"]) for r in rows]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", default=[], metavar="SPEC")
    parser.add_argument("--baseline", help="variant the others are compared with (first)")
    parser.add_argument("--genres", default=",".join(GENRES))
    for name, default in GENRES.items():
        parser.add_argument(f"--{name}", default=str(DATA / default), help="its data")
    parser.add_argument("--ks", default="5,10,20", type=lambda s: [int(k) for k in s.split(",")])
    parser.add_argument("--at", type=int, default=10, help="recall@ compared across variants")
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", action="append", default=[], metavar="FILE")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fires", action="store_true")
    parser.add_argument("--logo", action="store_true")
    parser.add_argument("--halves", action="append", default=[], metavar="GENRE")
    parser.add_argument("--types", action="store_true", help="differences per question type")
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    if not args.variant and not args.compare:
        args.variant = ["base=hybrid"]
    return args


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Evaluate the variants (if any) and add the saved ones: the run's record."""
    cfg = Config()  # the defaults, whatever config file or environment the caller has
    names = [g.strip() for g in args.genres.split(",") if g.strip()]
    unknown = [g for g in names if g not in GENRES]
    if unknown:
        raise SystemExit(f"unknown genre(s) {unknown}; choose from {list(GENRES)}")
    genres = [load_genre(name, getattr(args, name)) for name in names]
    prepared = prepare(cfg, [parse_variant(spec) for spec in args.variant])
    load = os.getloadavg()
    record: dict[str, Any] = {"commit": _commit(), "ks": args.ks, "load_before": load,
                              "genres": {g.name: _genre_info(g) for g in genres}}  # fmt: skip
    if prepared:
        record.update(evaluate(genres, prepared, cfg, args))
    else:
        record["variants"] = {}
    record["load_after"] = os.getloadavg()
    record["genres_rows"] = {g.name: _question_keys(g) for g in genres}
    merge_saved(record, args.compare)
    return record


def _genre_info(genre: Genre) -> dict[str, Any]:
    return {"source": genre.bench.source, "labels": list(genre.bench.labels.values()),
            "conversations": [c.name for c in genre.bench.conversations]}  # fmt: skip


def _question_keys(genre: Genre) -> list[tuple[str, int, str]]:
    return [(c.name, i, qa["question"]) for c in genre.bench.conversations
            for i, qa in enumerate(c.questions)]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Run, print the report, save what was asked for."""
    args = parse_args(argv)
    record = run(args)
    baseline = args.baseline or next(iter(record["variants"]), None)
    if baseline is None or baseline not in record["variants"]:
        raise SystemExit(f"--baseline {baseline!r} is not a variant of this run")
    report = genre_report.report(record, baseline, args)
    print(report)
    if args.out:
        args.out.write_text(report + "\n", encoding="utf-8")
    if args.save:
        kept = {k: v for k, v in record.items() if k != "genres_rows"}
        kept["variants"] = {n: v for n, v in record["variants"].items() if "saved" not in v}
        args.save.write_text(json.dumps(kept, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
