"""`eval`: recall tables per strategy and per category, answer metrics, timings."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rich.table import Table

from memcli.present.common import new_table
from memcli.present.output import write_file

if TYPE_CHECKING:
    from memcli.present.output import Output


def show_eval(out: Output, report: dict[str, Any], json_out: Any) -> None:
    """Benchmark tables on stdout; every question's result in the JSON file when asked."""
    if json_out is not None:
        write_file(json_out, json.dumps(report, indent=1, ensure_ascii=False))
    if out.json:
        out.record({k: v for k, v in report.items() if k != "questions"})
        return
    out.table(_recall_table(report))
    out.table(_category_table(report))
    if "consolidation" in report:
        out.table(_gain_table(report["consolidation"], report.get("grouping", "category")))
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
    table = new_table(title, columns)
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
    table = new_table(f"recall@{cut} by {grouping} (%)", (grouping, "n", *names))
    for cat, block in results[names[0]]["by_category"].items():
        row = [results[n]["by_category"][cat]["recall"][cut] for n in names]
        table.add_row(cat, str(block["n"]), *[f"{v:.1f}" for v in row])
    return table


def _gain_table(gain: dict[str, Any], grouping: str) -> Table:
    """Recall of each strategy and category on the store as ingest left it and after
    consolidate, with the paired bootstrap band (95%) of the difference."""
    columns = ("strategy", grouping, "n", "ingest only", "consolidated", "gain", "band")
    title = f"what consolidation buys: recall@{gain['k']} (%), the same questions before and after"
    table = new_table(title, columns, left=2)
    for name, block in gain["strategies"].items():
        rows = [("all", block["all"]), *block["by_category"].items()]
        for index, (category, entry) in enumerate(rows):
            table.add_row(
                name if index == 0 else "",
                category,
                str(entry["n"]),
                f"{entry['before']:.1f}",
                f"{entry['after']:.1f}",
                f"{entry['gain']:+.1f}",
                f"[{entry['low']:+.1f}, {entry['high']:+.1f}]",
            )
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
    table = new_table("answers: LLM judge, F1, BLEU-1 (%)", columns, left=2)
    for name, res in results.items():
        table.add_row(name, "all", str(res["n"]), *answer_cells(res.get("answers")))
        for cat, block in res["by_category"].items():
            table.add_row("", cat, str(block["n"]), *answer_cells(block.get("answers")))
    return table
