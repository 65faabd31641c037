"""`memcli eval`: built-in benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memcli import render
from memcli.cli.common import State, need_command, with_state
from memcli.cli.root import app
from memcli.errors import UsageError

eval_app = typer.Typer(rich_markup_mode="rich")
app.add_typer(eval_app, name="eval")

LocomoFile = Annotated[Path, typer.Argument(help="A LoCoMo JSON file (locomo10.json format).")]
Strategies = Annotated[
    str, typer.Option("--strategy", help="Strategy, or several separated by commas.")
]
Cutoffs = Annotated[str, typer.Option("--k", help="Cut-offs for recall@k.")]
JsonOut = Annotated[
    Path | None, typer.Option("--json-out", help="Write every question's result here.")
]
Consolidate = Annotated[
    bool,
    typer.Option(
        "--consolidate/--no-consolidate",
        help="Consolidate each store before asking (no-LLM stages when no LLM is set).",
    ),
]


def _int_list(text: str) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise UsageError(f"--k expects numbers like 5,10,20, got {text!r}") from None
    if not values or values[0] < 1:
        raise UsageError("--k needs at least one positive number")
    return values


@eval_app.callback(invoke_without_command=True)
def eval_main(ctx: typer.Context) -> None:
    """Built-in benchmarks: LoCoMo retrieval recall and, with an LLM, answer quality.

    [b]Examples[/b]

      memcli eval locomo locomo-dev.json

      memcli --json eval locomo locomo-dev.json --strategy hybrid,gam
    """
    need_command(ctx)


@eval_app.command("locomo")
@with_state("json_mode")
def eval_locomo(
    state: State,
    file: LocomoFile,
    strategy: Strategies = "hybrid",
    k: Cutoffs = "5,10,20",
    json_out: JsonOut = None,
    consolidate: Consolidate = False,
) -> None:
    """Evidence recall of retrieval on LoCoMo, each conversation in its own temporary store.

    With an LLM, answers are scored too: LLM judge, token F1, BLEU-1, tokens per query.

    [b]Examples[/b]

      memcli eval locomo locomo-dev.json

      memcli eval locomo locomo-dev.json --strategy lexical,semantic,hybrid --json-out r.json
    """
    from memcli.eval.locomo import run_locomo
    from memcli.output import check_writable

    names = [s.strip() for s in strategy.split(",") if s.strip()]
    cfg = state.config_obj()
    check_writable(json_out)  # before the run, not after an hour of it
    report = run_locomo(
        str(file), cfg, names, _int_list(k), state.out.progress(), consolidate=consolidate
    )
    render.eval_report(state.out, report, json_out)
