"""`memcli ask`: answer from memory with citations, or print the packed memory."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

from memcli.cli.common import State, check_strategy, memory, with_state
from memcli.cli.root import app
from memcli.errors import UsageError

if TYPE_CHECKING:
    from memcli.models import Answer

Question = Annotated[str, typer.Argument(help="The question; '-' reads one per stdin line.")]
ContextOnly = Annotated[
    bool, typer.Option("--context-only", help="Print the packed memory; no LLM is called.")
]
K = Annotated[
    int | None,
    typer.Option("-k", "--k", min=1, help="Hits to return and to pack into the context."),
]
Explain = Annotated[
    bool,
    typer.Option(
        "--explain",
        help="Say why each hit ranked: its score by signal and the graph path that brought"
        " it (--json: why, via), where the strategy says so (hybrid does).",
    ),
]
Strategy = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        help="hybrid (default), dwpr, gam, lexical, semantic, or the entity-graph"
        " traversals beam, watercircles and astar.",
    ),
]


@app.command()
@with_state("db", "space", "json_mode")
def ask(
    state: State,
    question: Question,
    context_only: ContextOnly = False,
    k: K = None,
    strategy: Strategy = None,
    explain: Explain = False,
) -> None:
    """Answer from memory with citations, or print the packed memory with --context-only.

    Answering needs an LLM (llm.provider, llm.model); the answer cites the node ids it used.

    With '-', every stdin line gives exactly one output line, in the same order.

    A blank stdin line gives an empty line (--json: an object with empty question and hits).

    [b]Examples[/b]

      memcli ask "When is the dentist appointment?"

      memcli ask --context-only "What did Ana say about the chess club?"

      memcli --json ask --strategy lexical -k 5 --context-only "chess club"

      memcli --json ask --explain -k 3 --context-only "chess club"

      printf 'Q1\\nQ2\\n' | memcli --json ask --context-only -
    """
    from memcli.present.answer import show_answer

    batch = question == "-"
    if not question.strip():
        raise UsageError(
            "the question is empty", fix="ask about something: memcli ask 'where did we meet?'"
        )
    if strategy is not None:
        check_strategy([strategy])
    with memory(state) as mem:
        for q in _stdin_lines() if batch else [question]:
            if batch and not q:
                answer = _blank()
            else:
                answer = mem.ask(
                    q, strategy=strategy, k=k, context_only=context_only, explain=explain
                )
            show_answer(state.out, answer, one_line=batch, explain=explain)


def _stdin_lines() -> Iterator[str]:
    """Every stdin line, stripped; blank ones too, so output lines match input lines."""
    for line in sys.stdin:
        yield line.strip()


def _blank() -> Answer:
    """The result of a blank batch question: nothing asked, nothing found."""
    from memcli.models import Answer

    return Answer(question="", context="", hits=[])
