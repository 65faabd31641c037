"""The three-genre run as Markdown tables: recall per genre and type, the macro mean,
differences against the baseline with their noise bands, leave-one-genre-out, fire counts."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from memcli.eval.bootstrap import Band, paired_bootstrap

Rows = list[dict[str, Any]]


def recall(rows: Rows, k: int) -> float:
    """Mean recall@k over the rows, in points (as `memcli eval` reports it)."""
    return 100 * sum(r["recall"][str(k)] for r in rows) / len(rows) if rows else 0.0


def p50_ms(rows: Rows) -> float:
    """The median ask latency, in milliseconds (as `memcli eval` takes it)."""
    latencies = sorted(r["latency_s"] for r in rows)
    return 1000 * latencies[len(latencies) // 2] if latencies else 0.0


def _genres(record: dict[str, Any]) -> list[str]:
    return list(record["genres"])


def _rows(record: dict[str, Any], variant: str, genre: str) -> Rows:
    return list(record["variants"][variant]["genres"][genre])


def macro(record: dict[str, Any], variant: str, k: int) -> float:
    """The mean over genres of the variant's recall@k."""
    genres = _genres(record)
    return sum(recall(_rows(record, variant, g), k) for g in genres) / len(genres)


def genre_table(record: dict[str, Any], genre: str) -> list[str]:
    """Recall@k and p50 of every variant on one genre, and recall@10 per question type."""
    ks = record["ks"]
    labels = record["genres"][genre]["labels"]
    first = _rows(record, next(iter(record["variants"])), genre)
    sizes = {label: sum(r["category"] == label for r in first) for label in labels}
    labels = [label for label in labels if sizes[label]]
    head = ["variant", *(f"@{k}" for k in ks), "p50 ms", *(f"{t} ({sizes[t]})" for t in labels)]
    lines = _header(head)
    for name in record["variants"]:
        rows = _rows(record, name, genre)
        cells = [f"{recall(rows, k):.1f}" for k in ks] + [f"{p50_ms(rows):.0f}"]
        cells += [f"{recall([r for r in rows if r['category'] == t], 10):.1f}" for t in labels]
        lines.append(_line([name, *cells]))
    n = len(first)
    return [f"### {genre}: {n} questions, recall@k and recall@10 per type", "", *lines]


def summary_table(record: dict[str, Any], k: int) -> list[str]:
    """Recall@k of every variant per genre and the macro mean."""
    genres = _genres(record)
    lines = _header(["variant", "spec", *genres, "macro"])
    for name, variant in record["variants"].items():
        cells = [f"{recall(_rows(record, name, g), k):.1f}" for g in genres]
        spec = variant["spec"] + (" (saved)" if "saved" in variant else "")
        lines.append(_line([name, f"`{spec}`", *cells, f"{macro(record, name, k):.1f}"]))
    return [f"### recall@{k} per genre and macro mean", "", *lines]


def bands(record: dict[str, Any], variant: str, baseline: str, k: int,
          args: argparse.Namespace) -> Any:  # fmt: skip
    """The paired bootstrap bands of variant - baseline, recall@k in points."""
    pairs = {
        g: ([100 * r["recall"][str(k)] for r in _rows(record, variant, g)],
            [100 * r["recall"][str(k)] for r in _rows(record, baseline, g)])
        for g in _genres(record)
    }  # fmt: skip
    return paired_bootstrap(pairs, resamples=args.resamples, seed=args.seed)


def cell(band: Band) -> str:
    """A difference with its interval; `*` when the interval excludes 0."""
    mark = " *" if band.excludes_zero else ""
    return f"{band.diff:+.1f} [{band.low:+.1f}, {band.high:+.1f}]{mark}"


def _moved(record: dict[str, Any], variant: str, baseline: str, genre: str, k: int) -> str:
    """Questions whose recall@k went up / down."""
    pairs = zip(_rows(record, variant, genre), _rows(record, baseline, genre), strict=True)
    deltas = [a["recall"][str(k)] - b["recall"][str(k)] for a, b in pairs]
    return f"{sum(d > 0 for d in deltas)}/{sum(d < 0 for d in deltas)}"


def difference_table(record: dict[str, Any], baseline: str, args: argparse.Namespace) -> list[str]:
    """Every variant against the baseline: per genre and macro, with bands; questions
    up/down per genre; p50 as a ratio of the baseline's (both measured in this run)."""
    k, genres = args.at, _genres(record)
    head = ["variant", *(f"Δ {g}" for g in genres), "Δ macro", "up/down", "p50 ×"]
    lines = _header(head)
    for name, variant in record["variants"].items():
        if name == baseline:
            continue
        found = bands(record, name, baseline, k, args)
        moved = " ".join(_moved(record, name, baseline, g, k) for g in genres)
        ratio = " ".join(
            f"{p50_ms(_rows(record, name, g)) / max(p50_ms(_rows(record, baseline, g)), 1e-9):.2f}"
            for g in genres
        )
        if "saved" in variant or "saved" in record["variants"][baseline]:
            ratio = "(other run)"
        cells = [cell(found.groups[g]) for g in genres] + [cell(found.macro), moved, ratio]
        lines.append(_line([name, *cells]))
    return [
        f"### recall@{k} difference from `{baseline}`, 95% paired bootstrap interval "
        f"({args.resamples} resamples, seed {args.seed}; * = excludes 0)",
        "",
        *lines,
    ]


def types_table(record: dict[str, Any], baseline: str, args: argparse.Namespace) -> list[str]:
    """Every variant against the baseline per genre and question type, with bands (each
    type's questions resampled apart)."""
    lines = _header(["genre", "type (questions)", f"`{baseline}`", "variant", "value",
                     "Δ [95%]", "up/down"])  # fmt: skip
    for genre in _genres(record):
        base = _rows(record, baseline, genre)
        for label in record["genres"][genre]["labels"]:
            picked = [i for i, r in enumerate(base) if r["category"] == label]
            for name in record["variants"] if picked else ():
                if name != baseline:
                    rows = _rows(record, name, genre)
                    lines.append(_type_line(genre, label, name, rows, base, picked, args))
    return [f"### recall@{args.at} per question type against `{baseline}`", "", *lines]


def _type_line(genre: str, label: str, name: str, rows: Rows, base: Rows, picked: list[int],
               args: argparse.Namespace) -> str:  # fmt: skip
    """One type's row of `types_table`."""
    k = str(args.at)
    a = [100 * rows[i]["recall"][k] for i in picked]
    b = [100 * base[i]["recall"][k] for i in picked]
    band = paired_bootstrap({label: (a, b)}, resamples=args.resamples, seed=args.seed)
    pairs = list(zip(a, b, strict=True))
    moved = f"{sum(x > y for x, y in pairs)}/{sum(x < y for x, y in pairs)}"
    return _line([genre, f"{label} ({len(picked)})", f"{sum(b) / len(b):.1f}", name,
                  f"{sum(a) / len(a):.1f}", cell(band.groups[label]), moved])  # fmt: skip


def logo_table(record: dict[str, Any], baseline: str, args: argparse.Namespace) -> list[str]:
    """Leave one genre out: the variant best on the other genres, reported on this one."""
    k, genres = args.at, _genres(record)
    names = list(record["variants"])
    means = {n: {g: recall(_rows(record, n, g), k) for g in genres} for n in names}
    lines = _header(["held out", "chosen on the others", f"Δ on held out vs `{baseline}`",
                     "best on held out itself"])  # fmt: skip
    for held in genres:
        chosen = _chosen(means, names, [g for g in genres if g != held], baseline)
        oracle = max(names, key=lambda n: (means[n][held], n == baseline))
        band = bands(record, chosen, baseline, k, args).groups[held]
        lines.append(_line([held, chosen, cell(band), f"{oracle} ({means[oracle][held]:.1f})"]))
    return [f"### leave one genre out among all variants (recall@{k})", "", *lines]


def _chosen(
    means: dict[str, dict[str, float]], names: list[str], on: list[str], baseline: str
) -> str:
    """The variant with the best mean over the genres `on` (the baseline wins a tie)."""
    return max(names, key=lambda n: (sum(means[n][g] for g in on), n == baseline))


def logo_pairs(record: dict[str, Any], baseline: str, args: argparse.Namespace) -> list[str]:
    """Each variant against the baseline alone, leave one genre out: for each held-out genre,
    the one of the two with the better mean on the other genres, and what choosing it gains
    on the held-out genre (0 when the baseline is chosen); the sum is the out-of-sample gain."""
    k, genres = args.at, _genres(record)
    lines = _header(["variant", *(f"{g} held out" for g in genres), "out-of-sample sum"])
    for name in record["variants"]:
        if name == baseline:
            continue
        pair = [baseline, name]
        means = {n: {g: recall(_rows(record, n, g), k) for g in genres} for n in pair}
        cells, total = [], 0.0
        for held in genres:
            chosen = _chosen(means, pair, [g for g in genres if g != held], baseline)
            gain = means[chosen][held] - means[baseline][held]
            total += gain
            cells.append(f"{'variant' if chosen == name else 'baseline'} {gain:+.1f}")
        lines.append(_line([name, *cells, f"{total:+.1f}"]))
    return [f"### leave one genre out, each variant against `{baseline}` (recall@{k})", "",
            *lines]  # fmt: skip


def halves_table(
    record: dict[str, Any], baseline: str, genre: str, args: argparse.Namespace
) -> list[str]:
    """Each variant against the baseline on the two halves of a genre's conversations (for
    a component that fires in one genre only: set on one half, reported on the other)."""
    k, convs = args.at, record["genres"][genre]["conversations"]
    half = {"A": convs[: (len(convs) + 1) // 2], "B": convs[(len(convs) + 1) // 2 :]}
    if not half["B"]:
        return [f"### {genre}: one conversation, no halves", ""]

    def pick(name: str, part: str) -> list[float]:
        rows = _rows(record, name, genre)
        return [100 * r["recall"][str(k)] for r in rows if r["conversation"] in half[part]]

    lines = _header(["variant", *(f"Δ {p}: {', '.join(c)} ({len(pick(baseline, p))} q)"
                                  for p, c in half.items())])  # fmt: skip
    for name in record["variants"]:
        if name != baseline:
            pairs = {p: (pick(name, p), pick(baseline, p)) for p in half}
            found = paired_bootstrap(pairs, resamples=args.resamples, seed=args.seed)
            lines.append(_line([name, *(cell(found.groups[p]) for p in half)]))
    return [f"### {genre} by halves of its conversations (recall@{k})", "", *lines]


def fires_tables(record: dict[str, Any]) -> list[str]:
    """Questions each pattern or cue fires on, and turns each memory-side pattern marks."""
    fires = record["fires"]
    genres = list(fires)
    names = list(dict.fromkeys(n for g in genres for n in fires[g]["fires"]))
    lines = _header(["pattern or cue", *(f"{g} (of {fires[g]['questions']})" for g in genres)])
    for name in names:
        lines.append(_line([name, *(str(fires[g]["fires"].get(name, 0)) for g in genres)]))
    turns = list(dict.fromkeys(n for g in genres for n in fires[g]["turns"]))
    lines += ["", *_header(["turns marked", *genres])]
    for name in turns:
        lines.append(_line([name, *(str(fires[g]["turns"].get(name, 0)) for g in genres)]))
    return ["### how often each pattern fires (questions; then turns)", "", *lines]


def report(record: dict[str, Any], baseline: str, args: argparse.Namespace) -> str:
    """The whole report."""
    out = [f"## three-genre run at {record['commit']}", "", *_about(record), ""]
    for genre in _genres(record):
        out += [*genre_table(record, genre), ""]
    out += [*summary_table(record, args.at), ""]
    if len(record["variants"]) > 1:
        out += [*difference_table(record, baseline, args), ""]
    if getattr(args, "types", False) and len(record["variants"]) > 1:
        out += [*types_table(record, baseline, args), ""]
    if args.logo and len(record["variants"]) > 1:
        out += [*logo_table(record, baseline, args), ""]
        out += [*logo_pairs(record, baseline, args), ""]
    for genre in args.halves:
        out += [*halves_table(record, baseline, genre, args), ""]
    if record.get("fires"):
        out += [*fires_tables(record), ""]
    return "\n".join(out).rstrip()


def _about(record: dict[str, Any]) -> list[str]:
    before = " ".join(f"{x:.2f}" for x in record["load_before"])
    after = " ".join(f"{x:.2f}" for x in record["load_after"])
    lines = [f"- load average (1, 5, 15 min): {before} before, {after} after"]
    for genre, built in (record.get("builds") or {}).items():
        ingest = sum(b["ingest_s"] for b in built)
        consolidate = sum(b["consolidate_s"] for b in built)
        lines.append(f"- {genre}: {len(built)} stores; building them took ingest {ingest:.0f} s "
                     f"+ consolidate {consolidate:.0f} s (when built)")  # fmt: skip
    if record.get("code_hash"):
        lines.append(f"- store-building code hash {record['code_hash'][:12]}")
    return lines


def _header(cells: Sequence[str]) -> list[str]:
    return [_line(cells), _line(["---"] * len(cells))]


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
