"""The search page (`/search?q=TEXT`), the overview and the consolidation runs.

Search is `Memory.ask(..., context_only=True, explain=True)`: the same ranking and packing
as `memcli ask`, with each hit's score broken down by signal where the strategy says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memcli.errors import UsageError
from memcli.ui.html import day, esc, node_link, pager, table, url
from memcli.ui.svg import why_bar, why_legend

if TYPE_CHECKING:
    from memcli.memory import Memory
    from memcli.models import Answer, Hit

MAX_K = 100


def parse_k(text: str | None, default: int) -> int:
    """The number of hits asked for: 1 to MAX_K; UsageError otherwise."""
    if not text:
        return default
    if not text.strip().isdigit() or not 1 <= int(text) <= MAX_K:
        raise UsageError(f"k must be a whole number from 1 to {MAX_K}, got {text!r}")
    return int(text)


def _form(mem: Memory, q: str, strategy: str, k: int) -> str:
    from memcli.retrieval import strategy_names

    options = "".join(
        f'<option value="{esc(s)}"{" selected" if s == strategy else ""}>{esc(s)}</option>'
        for s in strategy_names()
    )
    return (
        '<form class="search" action="/search" method="get">'
        f'<input id="q" name="q" type="search" value="{esc(q)}" placeholder="Ask the memory"'
        ' autofocus aria-label="question">'
        f'<label>strategy <select name="strategy">{options}</select></label>'
        f'<label>hits <input name="k" type="number" min="1" max="{MAX_K}" value="{k}"></label>'
        '<button type="submit">Search</button></form>'
    )


def search(mem: Memory, q: str, strategy: str | None, k_text: str | None) -> str:
    """The search form and, for a question, its ranked hits with why each ranked."""
    cfg = mem.cfg.retrieval
    strategy = strategy or cfg.strategy
    k = parse_k(k_text, cfg.k)
    body = "<h1>Search</h1>" + _form(mem, q, strategy, k)
    if not q.strip():
        return (
            body
            + '<p class="hint">Type a question: the hits come ranked as '
            + ("<code>memcli ask</code> ranks them, each with its score by signal.</p>")
        )
    answer = mem.ask(q, strategy=strategy, k=k, context_only=True, explain=True)
    return body + _results(answer, strategy)


def _results(answer: Answer, strategy: str) -> str:
    if not answer.hits:
        return '<p class="empty">No memory matched.</p>'
    packed = set(answer.packed)
    explained = any(h.why is not None for h in answer.hits)
    note = (
        "Each score is the sum of the parts shown (hover a part for what it means)."
        if explained
        else f"The {esc(strategy)} strategy does not break its scores down: score alone."
    )
    items = "".join(_hit(i, h, h.node.node_id in packed) for i, h in enumerate(answer.hits, 1))
    context = (
        "<details class=context><summary>The packed context (what an LLM would read)"
        f"</summary><pre>{esc(answer.context)}</pre></details>"
    )
    return f'<p class="hint">{note}</p><ol class="hits">{items}</ol>{context}'


def _hit(rank: int, hit: Hit, packed: bool) -> str:
    node = hit.node
    who = f'<span class="who">{esc(node.speaker)}</span>' if node.speaker else ""
    badge = '<span class="badge">packed</span>' if packed else ""
    status = '<span class="badge warn">superseded</span>' if node.status == "superseded" else ""
    head = (
        f'<div class="hit-head"><span class="rank">{rank}</span>{node_link(node.node_id)}'
        f'<span class="kind">{esc(node.kind)}</span>{who}'
        f'<span class="when">{esc(day(node.timestamp))}</span>'
        f'<span class="score">{hit.score:.3f}</span>{badge}{status}</div>'
    )
    text = f'<p class="text">{esc(node.text)}</p>'
    why = ""
    if hit.why is not None:
        why = f'<div class="whyrow">{why_bar(hit.why, hit.score)}{why_legend(hit.why)}</div>'
    via = ""
    if hit.via:
        steps = " → ".join(node_link(n) for n in hit.via)
        how = (
            "lifted by the turn next to it"
            if "reply" in (hit.why or {})
            else "reached through the graph"
        )
        via = f'<p class="via">{how}: {steps}</p>'
    sources = ""
    if hit.sources:
        sources = f'<p class="sources">from turns {esc(", ".join(hit.sources))}</p>'
    return f'<li class="hit" id="hit-{rank}">{head}{text}{why}{via}{sources}</li>'


def overview(mem: Memory) -> str:
    """What the space holds: counts by kind and edge type, sessions, sources, the model."""
    from memcli.ops.inspect import stats as read_stats

    mem.require_space()
    stats = read_stats(mem, health=False)  # pending work is `memcli inspect`'s: slow at scale
    kinds = table(
        ["kind", "nodes"],
        [
            [f'<a href="{url("/list", kind=k)}">{esc(k)}</a>', f"{n:,}"]
            for k, n in stats["nodes"].items()
        ],
    )
    edges = table(["edge type", "edges"], [[esc(t), f"{n:,}"] for t, n in stats["edges"].items()])
    emb = stats["embedding"]
    facts = [
        ("store", esc(stats["db"])),
        ("space", esc(stats["space"]) + f" (of {esc(', '.join(stats['spaces']))})"),
        ("sessions", f'<a href="/timeline">{stats["sessions"]:,}</a>'),
        ("sources", f"{stats['sources']:,}"),
        ("forgotten turns", f"{stats['forgotten']:,}"),
        ("embedding", esc(f"{emb['provider']}:{emb['model'] or ''} ({emb['dim'] or '-'} dims)")),
        ("file size", f"{stats['bytes'] / 1e6:,.1f} MB"),
    ]
    rows = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in facts)
    return (
        f'<h1>Overview</h1><table class="facts">{rows}</table>'
        f'<div class="cols"><section>{kinds}</section><section>{edges}</section></div>'
        '<p class="hint">Read-only: this page never changes the store.</p>'
    )


_RUN_COLUMNS = (
    "stage", "status", "started", "items", "nodes", "edges", "model calls", "cached",
    "prompt tokens", "completion tokens", "failures", "last error",
)  # fmt: skip


def _run_row(run: dict[str, Any]) -> list[str]:
    failed = ' class="bad"' if run["failures"] else ""
    values = [run[k] for k in ("items", "nodes", "edges", "llm_calls", "cache_hits")]
    values += [run["prompt_tokens"], run["completion_tokens"]]
    return [
        esc(run["stage"]),
        esc(run["status"]),
        esc(day(run["started_at"])),
        *(f"{int(v):,}" for v in values),
        f"<span{failed}>{int(run['failures']):,}</span>",
        esc(run.get("last_error") or ""),
    ]


def runs(mem: Memory, offset: int) -> str:
    """Consolidation runs, newest first, with their counts, tokens and failures."""
    from memcli.ops.browse import runs as run_page

    page = run_page(mem, limit=50, offset=offset)
    if not page.total:
        return "<h1>Consolidation</h1><p class=empty>No consolidation has run in this space."
    rows = [_run_row(r) for r in page.items]
    return (
        "<h1>Consolidation runs</h1>"
        + pager("/runs", offset, page.limit, page.total)
        + table(_RUN_COLUMNS, rows, "runs")
    )
