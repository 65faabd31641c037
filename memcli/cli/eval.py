"""`memcli eval`: built-in benchmarks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from memcli.cli.common import State, check_strategy, need_command, with_state
from memcli.cli.helptext import prose
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
        help="Ask every question of each store as ingest left it, consolidate it (no-LLM "
        "stages when no LLM is set) and ask again: recall side by side per category.",
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


def _run(
    state: State,
    benchmark: Callable[..., dict[str, Any]],
    target: Any,
    strategy: str,
    k: str,
    json_out: Path | None,
    consolidate: bool,
) -> None:
    """Run one benchmark over `target` with the options every eval command shares."""
    from memcli.present.eval import show_eval
    from memcli.present.output import check_writable

    names = [s.strip() for s in strategy.split(",") if s.strip()]
    check_strategy(names)
    cutoffs = _int_list(k)
    check_writable(json_out)  # before the run, not after an hour of it
    report = benchmark(
        target, state.config_obj(), names, cutoffs, state.out.progress(), consolidate=consolidate
    )
    show_eval(state.out, report, json_out)


@eval_app.callback(invoke_without_command=True)
@prose
def eval_main(ctx: typer.Context) -> None:
    """Built-in benchmarks: retrieval recall on LoCoMo or on your own annotated chats and,
    with an LLM, answer quality.

    [b]Examples[/b]

      memcli eval locomo locomo-dev.json

      memcli --json eval locomo locomo-dev.json --strategy hybrid,gam

      memcli eval chats my-chats/ --consolidate
    """
    need_command(ctx)


@eval_app.command("locomo")
@with_state("db", "space", "json_mode", unused=True)
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

    _run(state, run_locomo, str(file), strategy, k, json_out, consolidate)


ChatPaths = Annotated[
    list[Path],
    typer.Argument(
        help="Directories of N.jsonl(.gz) + N.questions.json pairs, questions files, "
        "or conversation files with their questions beside them."
    ),
]


@eval_app.command("chats")
@with_state("db", "space", "json_mode", unused=True)
def eval_chats(
    state: State,
    paths: ChatPaths,
    strategy: Strategies = "hybrid",
    k: Cutoffs = "5,10,20",
    json_out: JsonOut = None,
    consolidate: Consolidate = False,
) -> None:
    """Evidence recall of retrieval on annotated conversations, per question type.

    Each conversation (any format `memcli ingest` reads, gzip or not, messages with ids)
    goes into its own temporary store; its questions file is a JSON list of
    {"question", "evidence", "answer", "type"} objects, evidence being the ids of the
    messages that hold the answer.

    [b]Examples[/b]

      memcli eval chats conversations/ --consolidate

      memcli eval chats support.jsonl.gz --strategy lexical,semantic,hybrid --json-out r.json
    """
    from memcli.eval.chats import run_chats

    _run(state, run_chats, [str(p) for p in paths], strategy, k, json_out, consolidate)
