"""Per-command renderers: the same result as text for people or one JSON object per line."""

from __future__ import annotations

import json
from typing import Any

from rich import box
from rich.table import Table

from memcli.models import AddReport, Answer, IngestReport, PruneReport
from memcli.output import Output, write_file


def _table(title: str, columns: tuple[str, ...], left: int = 1, **options: Any) -> Table:
    """A table whose first `left` columns are text (left-aligned) and the rest numbers."""
    table = Table(title=title, title_justify="left", **options)
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i < left else "right")
    return table


def noun(n: int, word: str) -> str:
    """`word` for one, `word`s for any other count."""
    return word if n == 1 else f"{word}s"


def ingest(out: Output, report: IngestReport) -> None:
    """One summary line (or one JSON object) for an ingest run; nothing under -q."""
    if out.json:  # the warnings are in the record
        out.record(report.to_dict())
        return
    for warning in report.warnings:
        out.info(f"memcli: warning: {warning}")
    if out.quiet:
        return
    files = len(report.files)
    line = f"{report.new} new {noun(report.new, 'episode')}"
    if report.new:
        line += f" in {report.sessions} {noun(report.sessions, 'session')}"
    if report.skipped:
        line += f", {report.skipped} already stored"
    if report.invalid:
        line += f", {report.invalid} invalid {noun(report.invalid, 'record')} skipped"
    if report.secrets_masked:
        line += f", {report.secrets_masked} {noun(report.secrets_masked, 'secret')} masked"
    line += f" ({files} {noun(files, 'file')}, {report.seconds:.1f} s)"
    out.text(line)


def added(out: Output, report: AddReport) -> None:
    """The id of the episode holding the added text (or one JSON object)."""
    if out.json:
        out.record(report.to_dict())
        return
    state = "stored as" if report.new else "already stored as"
    out.text(f"{state} {report.node_id} (session {report.session})")


def answer(out: Output, result: Answer, one_line: bool = False) -> None:
    """The packed context (or the answer with its citations); one line each in batch mode."""
    if out.json:
        out.record(result.to_dict())
        return
    if result.answer is not None:
        text = result.answer
        if result.citations:
            text += "\n\nsources: " + ", ".join(result.citations)
        if out.verbose and result.usage:
            u = result.usage
            out.info(
                f"{u.get('prompt_tokens', 0)} prompt + {u.get('completion_tokens', 0)} completion"
                f" tokens, {u.get('llm_calls', 0)} model calls, {u.get('cache_hits', 0)} cached"
            )
    else:
        text = result.context
        if not text and result.question:
            out.info("no memories matched")
    if one_line:
        text = " ".join(text.split())
    if text or one_line:
        out.text(text)


def record_or_line(out: Output, result: dict[str, Any], verb: str) -> None:
    """A small result dict as JSON, or as `verb: key=value ...` (a report of what was
    done: nothing under -q)."""
    if out.json:
        out.record(result)
    elif not out.quiet:
        shown = ", ".join(f"{k} {v}" for k, v in result.items() if v is not None)
        out.text(f"{verb}: {shown}")


def counts_table(title: str, counts: dict[str, int], key: str) -> Table:
    """A two-column table of names and counts."""
    table = Table(title=title, title_justify="left")
    table.add_column(key)
    table.add_column("count", justify="right")
    for name, n in counts.items():
        table.add_row(name, str(n))
    if not counts:
        table.add_row("(none)", "0")
    return table


def stats(out: Output, stats: dict[str, Any]) -> None:
    """`memcli inspect` for people."""
    if out.json:
        out.record(stats)
        return
    emb, sources, sessions = stats["embedding"], stats["sources"], stats["sessions"]
    out.text(
        f"database  {stats['db']} ({stats['bytes']:,} bytes)\n"
        f"space     {stats['space']} (all spaces: {', '.join(stats['spaces']) or '-'})\n"
        f"sources   {sources} {noun(sources, 'source')}, {sessions} {noun(sessions, 'session')}\n"
        f"embedding {emb['provider']}"
        + (f" {emb['model']}" if emb["model"] else "")
        + (f" ({emb['dim']} dims)" if emb["dim"] else "")
    )
    out.table(counts_table("nodes", stats["nodes"], "kind"))
    out.table(counts_table("edges", stats["edges"], "type"))
    for extra in stats.get("sections", []):
        out.table(counts_table(extra["title"], extra["counts"], extra["key"]))
    if "consolidation" in stats:
        out.table(consolidation_health(stats["consolidation"]))


def consolidation_health(health: dict[str, Any]) -> Table:
    """Last run per consolidation stage, with failures and what is still pending."""
    columns = ("stage", "last run", "status", "units", "failed", "tokens", "pending")
    table = _table("consolidation", columns, left=3)
    notes = []
    for stage, pending in health["pending"].items():
        run = health["last_runs"].get(stage)
        if run is None:
            table.add_row(stage, "never", "", "", "", "", str(pending))
            continue
        tokens = run["prompt_tokens"] + run["completion_tokens"]
        when = (run["finished_at"] or run["started_at"] or "")[:16].replace("T", " ")
        cells = (str(run["items"]), str(run["failures"]), f"{tokens:,}", str(pending))
        table.add_row(stage, when, run["status"], *cells)
        if run["reason"]:
            notes.append(f"{stage}: {run['reason']}")
    t = health["totals"]
    gate = health.get("gate") or {}
    if gate:
        judged = gate.get("kept", 0) + gate.get("skipped", 0)
        notes.append(
            f"memory gate: {gate.get('skipped', 0)} of {judged} segments skipped, "
            f"~{gate.get('tokens_saved', 0):,} prompt tokens saved (all runs)"
        )
    table.caption = "\n".join(
        [
            *notes,
            f"all runs: {t['prompt_tokens']:,} prompt + {t['completion_tokens']:,} completion "
            f"tokens, {t['llm_calls']} model calls, {t['failures']} failures",
        ]
    )
    table.caption_justify = "left"
    return table


def node(out: Output, view: dict[str, Any]) -> None:
    """`memcli inspect node ID` for people."""
    if out.json:
        out.record(view)
        return
    lines = [f"{view['node_id']}  ({view['kind']}, space {view['space']})", "", view["text"], ""]
    for key in ("speaker", "session", "seq", "timestamp", "ref", "belief", "status", "created_at"):
        if view.get(key) is not None:
            lines.append(f"{key:<10} {view[key]}")
    for key, value in view["props"].items():
        lines.append(f"{key:<10} {json.dumps(value, ensure_ascii=False)}")
    out.text("\n".join(lines))
    table = Table(title="neighbours", title_justify="left")
    for col in ("dir", "edge", "node", "kind", "text"):
        table.add_column(col)
    for n in view["neighbours"]:
        arrow = "→" if n["direction"] == "out" else "←"
        table.add_row(arrow, n["type"], n["node_id"], n["kind"], n["text"])
    out.table(table)
    prov = view["provenance"]
    if prov["episodes"]:
        pairs = zip(prov["episodes"], prov["refs"], strict=True)
        named = [f"{i} ({r})" if r else i for i, r in pairs]
        out.text("derived from episodes: " + ", ".join(named))
    if prov["files"]:
        out.text("ingested from: " + ", ".join(prov["files"]))


def eval_report(out: Output, report: dict[str, Any], json_out: Any) -> None:
    """Benchmark tables on stdout; every question's result in the JSON file when asked."""
    if json_out is not None:
        write_file(json_out, json.dumps(report, indent=1, ensure_ascii=False))
    if out.json:
        out.record({k: v for k, v in report.items() if k != "questions"})
        return
    out.table(_recall_table(report))
    out.table(_category_table(report))
    info = report.get("answers", {})
    if "skipped" in info:
        out.info(f"answer metrics skipped: {info['skipped']}")
    elif info:
        out.table(answers_table(report["results"]))
        out.info(
            f"answers by {info['model']}, judged by {info['judge']}: {info['llm_calls']} model "
            f"calls, {info['cache_hits']} from the cache; tok/q = answer prompt + completion "
            "tokens (a cached reply counts its recorded tokens)"
        )
    timing = report.get("timing")
    built = (
        f" (ingest {timing['ingest_s']:.0f} s, consolidate {timing['consolidate_s']:.0f} s)"
        if timing
        else ""
    )
    out.info(f"{report['embedding']} embeddings, {report['seconds']:.0f} s{built}")


def _recall_table(report: dict[str, Any]) -> Table:
    """Recall at each cut-off, session recall, coverage and latency of every strategy."""
    ks = report["ks"]
    columns = ("strategy", "n", *[f"R@{k}" for k in ks], "session R@10", "coverage", "ms/q",
               "p50 ms")  # fmt: skip
    title = f"{report.get('title', 'LoCoMo')} evidence recall (%) — {report['file']}"
    table = _table(title, columns)
    for name, res in report["results"].items():
        table.add_row(
            name,
            str(res["n"]),
            *[f"{res['recall'][str(k)]:.1f}" for k in ks],
            f"{res['session_recall@10']:.1f}",
            f"{res['coverage']:.1f}",
            f"{res['latency_ms']['mean']:.0f}",
            f"{res['latency_ms']['p50']:.0f}",
        )
    return table


def _category_table(report: dict[str, Any]) -> Table:
    """Recall at 10 (or the largest cut-off) per question category (or type) and strategy."""
    ks, results = report["ks"], report["results"]
    cut = "10" if 10 in ks else str(ks[-1])
    names = list(results)
    grouping = report.get("grouping", "category")
    table = _table(f"recall@{cut} by {grouping} (%)", (grouping, "n", *names))
    for cat, block in results[names[0]]["by_category"].items():
        row = [results[n]["by_category"][cat]["recall"][cut] for n in names]
        table.add_row(cat, str(block["n"]), *[f"{v:.1f}" for v in row])
    return table


#: Answer metric columns (judge reward and share judged correct, F1, BLEU-1 as percentages;
#: tokens per query), in ANSWER_KEYS order.
ANSWER_COLUMNS = ("reward", "correct", "F1", "BLEU-1", "tok/q")
ANSWER_KEYS = ("judge_reward", "judge_accuracy", "f1", "bleu1", "tokens_per_query")


def answer_cells(block: dict[str, Any] | None) -> list[str]:
    """The answer metric cells of one table row ('-' when the block has none)."""
    if block is None:
        return ["-"] * len(ANSWER_KEYS)
    judged = block["judged"] > 0  # judge means are undefined when the judge graded nothing
    cells = [f"{block[k]:.1f}" if judged else "-" for k in ANSWER_KEYS[:2]]
    cells += [f"{block['f1']:.1f}", f"{block['bleu1']:.1f}"]
    return [*cells, f"{block['tokens_per_query']:.0f}"]


def answers_table(results: dict[str, Any]) -> Table:
    """Answer metrics of each strategy, overall and per category."""
    columns = ("strategy", "category", "n", *ANSWER_COLUMNS)
    table = _table("answers: LLM judge, F1, BLEU-1 (%)", columns, left=2)
    for name, res in results.items():
        table.add_row(name, "all", str(res["n"]), *answer_cells(res.get("answers")))
        for cat, block in res["by_category"].items():
            table.add_row("", cat, str(block["n"]), *answer_cells(block.get("answers")))
    return table


def prune(out: Output, report: PruneReport) -> None:
    """What a prune removed (or would remove): counts by kind, sources, a few examples.
    Under -q only a dry run, whose report is what was asked for, prints."""
    if out.json:
        out.record(report.to_dict())
        return
    if out.quiet and not report.dry_run:
        return
    verb = "would remove" if report.dry_run else "removed"
    total, edges = report.total, report.edges
    lines = [f"{verb} {total:,} {noun(total, 'node')} and {edges:,} {noun(edges, 'edge')}"]
    lines += [f"  {kind:<11} {n:>7,}" for kind, n in report.removed.items()]
    if report.sources:
        lines.append("source files: " + ", ".join(report.sources))
    if report.kept_shared:
        n = report.kept_shared
        lines.append(f"kept {n:,} {noun(n, 'episode')} that another source also holds")
    if report.cache_entries:
        lines.append(f"{report.cache_entries:,} cached model replies dropped")
    if report.examples:
        lines.append("examples:")
        lines += [f"  {e['node_id']:<8} {e['kind']:<10} {e['text']}" for e in report.examples]
    if report.vacuumed:
        lines.append(f"vacuumed: {report.bytes_before:,} → {report.bytes_after:,} bytes")
    out.text("\n".join(lines))
    if report.dry_run:
        out.info("dry run: nothing was changed")


_STAGE_COLUMNS = ("stage", "status", "units", "nodes", "edges", "calls", "cached", "failed")


def consolidate(out: Output, report: Any) -> None:
    """A ConsolidateReport: a table of stages, then each stage's note (why it was skipped,
    what waits), then token totals. When another run holds the lock: a message on stderr.
    With -q a real run prints nothing, so that a cron job mails only errors."""
    if out.json:
        out.record(report.to_dict())
        return
    if out.quiet and not report.dry_run:
        return
    if report.locked:
        holder = report.holder or {}
        out.info(
            f"another consolidation is running (pid {holder.get('pid')} on {holder.get('host')},"
            f" since {holder.get('since')}); nothing done"
        )
        return
    out.table(_stages_table(report))
    notes = [note for note in map(_stage_note, report.stages) if note]
    if notes:
        out.text("\n".join(notes))
    if report.dry_run and report.sessions:
        out.table(_buffers_table(report.sessions))
    t = report.totals()
    out.info(
        f"{t['prompt_tokens']:,} prompt + {t['completion_tokens']:,} completion tokens, "
        f"{t['llm_calls']} model {noun(t['llm_calls'], 'call')}, {t['cache_hits']} answered "
        f"from the cache, {t['failures']} {noun(t['failures'], 'failure')} "
        f"({report.seconds:.1f} s)"
    )


def _stages_table(report: Any) -> Table:
    """One row of counts per stage."""
    title = "consolidation (dry run: nothing written)" if report.dry_run else "consolidation"
    table = Table(title=title, title_justify="left", box=box.SIMPLE, pad_edge=False)
    for col in (*_STAGE_COLUMNS, "pending"):
        left = col in ("stage", "status")
        table.add_column(
            col, justify="left" if left else "right", min_width=max(len(col), 9 * left)
        )
    for s in report.stages:
        counts = (s.items, s.nodes, s.edges, s.llm_calls, s.cache_hits, s.failures, s.pending)
        table.add_row(s.name, s.status, *map(str, counts))
    return table


def _stage_note(s: Any) -> str:
    """`stage: why it was skipped; its extra counts`, or '' when there is nothing to say."""
    extra = [f"{k.replace('_', ' ')}: {v}" for k, v in s.extra.items() if v]
    if s.dropped:
        extra.append(f"invented ids dropped: {s.dropped}")
    if not (s.reason or extra):
        return ""
    return f"{s.name}: " + "; ".join([*([s.reason] if s.reason else []), *extra])


def _buffers_table(sessions: list[dict[str, Any]]) -> Table:
    table = _table("open session buffers", ("session", "pending turns", "tokens", "closes now"))
    for b in sessions:
        closes = "yes" if b["closes"] else "no"
        table.add_row(b["session"], str(b["pending"]), str(b["tokens"]), closes)
    return table


def export(out: Output, document: str, path: Any = None) -> None:
    """An exported document on stdout, or written to `path` with a note on stderr."""
    if path is None:
        out.text(document)
        return
    write_file(path, document)
    out.info(f"wrote {path}")
