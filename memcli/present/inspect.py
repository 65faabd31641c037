"""`inspect`: the store's counts and consolidation health, one node, its provenance, and
exported documents."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.table import Table

from memcli.present.common import SafeTable, counts_table, new_table, noun
from memcli.present.output import write_file

if TYPE_CHECKING:
    from memcli.present.output import Output


def show_stats(out: Output, stats: Mapping[str, Any]) -> None:
    """`memcli inspect` for people."""
    if out.json:
        out.record(stats)
        return
    emb, sources, sessions = stats["embedding"], stats["sources"], stats["sessions"]
    held = f"{sources} {noun(sources, 'source')}, {sessions} {noun(sessions, 'session')}"
    if stats.get("forgotten"):
        held += f", {stats['forgotten']:,} forgotten {noun(stats['forgotten'], 'turn')}"
    out.text(
        f"database  {stats['db']} ({stats['bytes']:,} bytes)\n"
        f"space     {stats['space']} (all spaces: {', '.join(stats['spaces']) or '-'})\n"
        f"sources   {held}\n"
        f"embedding {emb['provider']}"
        + (f" {emb['model']}" if emb["model"] else "")
        + (f" ({emb['dim']} dims)" if emb["dim"] else "")
        + (
            f"; configured: {emb['configured']} (`memcli reindex` embeds the store with it)"
            if emb.get("configured")
            else ""
        )
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
    table = new_table("consolidation", columns, left=3)
    notes = []
    blocked = health.get("blocked", {})
    waiting: dict[str, list[str]] = {}
    for stage, count in health["pending"].items():
        # Work no run will do with these settings is not "pending": said below, with why.
        pending = str(count)
        if count and stage in blocked:
            pending = "-"
            waiting.setdefault(blocked[stage], []).append(f"{stage} {count}")
        run = health["last_runs"].get(stage)
        if run is None:
            table.add_row(stage, "never", "", "", "", "", pending)
            continue
        tokens = run["prompt_tokens"] + run["completion_tokens"]
        when = (run["finished_at"] or run["started_at"] or "")[:16].replace("T", " ")
        cells = (str(run["items"]), str(run["failures"]), f"{tokens:,}", pending)
        table.add_row(stage, when, run["status"], *cells)
        if run["reason"]:
            notes.append(f"{stage}: {run['reason']}")
    notes += [f"waiting for {why}: {', '.join(stages)}" for why, stages in waiting.items()]
    if given_up := health.get("given_up"):
        units = ", ".join(f"{stage} {n}" for stage, n in given_up.items())
        notes.append(f"given up after replies that never validated in 3 runs: {units}")
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
            f"tokens, {t['llm_calls']} model calls, {t['failures']} failures"
            + (
                f"; {per:,.0f} tokens per turn consolidated"
                if (per := health.get("per_turn"))
                else ""
            ),
        ]
    )
    table.caption_justify = "left"
    return table


def show_node(out: Output, view: Mapping[str, Any]) -> None:
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
    table = SafeTable(title="neighbours", title_justify="left")
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


def provenance(view: dict[str, Any]) -> dict[str, Any]:
    """Where a node came from (its view cut down): its files, the turns behind it, and the
    nodes it rests on."""
    rests_on = [
        n
        for n in view["neighbours"]
        if (n["direction"] == "out" and n["type"] in ("DERIVED_FROM", "DERIVED_FROM_FACT"))
        or (n["direction"] == "in" and n["type"] == "PART_OF")
    ]
    return {
        "node_id": view["node_id"],
        "kind": view["kind"],
        "text": view["text"],
        "files": view["provenance"]["files"],
        "episodes": view["provenance"]["episodes"],
        "rests_on": rests_on,
    }


def show_document(out: Output, document: str, path: Any = None) -> None:
    """An exported document on stdout, or written to `path` with a note on stderr."""
    if path is None:
        out.text(document)
        return
    write_file(path, document)
    out.info(f"wrote {path}")
