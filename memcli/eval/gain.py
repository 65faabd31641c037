"""What consolidation buys: every question asked of a conversation's store before and after
`consolidate`, and the difference of recall per category with its paired bootstrap band."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memcli.eval.bootstrap import paired_bootstrap


def _recalls(rows: Sequence[dict[str, Any]], cut: str) -> list[float]:
    return [100 * float(r["recall"][cut]) for r in rows]


def _entry(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]], cut: str) -> dict:
    """Mean recall at `cut` before and after, and the band of after - before."""
    a, b = _recalls(after, cut), _recalls(before, cut)
    band = paired_bootstrap({"all": (a, b)}).groups["all"]
    return {
        "n": len(a),
        "before": sum(b) / len(b),
        "after": sum(a) / len(a),
        "gain": band.diff,
        "low": band.low,
        "high": band.high,
    }


def consolidation_gain(
    before: Mapping[str, list[dict[str, Any]]],
    after: Mapping[str, list[dict[str, Any]]],
    ks: Sequence[int],
    labels: Mapping[Any, str],
) -> dict[str, Any]:
    """Per strategy, recall@10 (or the largest cut-off) before and after consolidation over
    the same questions in the same order, overall and per category, each with its band."""
    cut = "10" if 10 in ks else str(max(ks))
    out: dict[str, Any] = {"k": int(cut), "strategies": {}}
    for strategy, rows_after in after.items():
        rows_before = before[strategy]
        by_category = {}
        for category, name in labels.items():
            picked = [i for i, r in enumerate(rows_after) if r["category"] == category]
            if picked:
                by_category[name] = _entry(
                    [rows_before[i] for i in picked], [rows_after[i] for i in picked], cut
                )
        out["strategies"][strategy] = {
            "all": _entry(rows_before, rows_after, cut),
            "by_category": by_category,
        }
    return out
