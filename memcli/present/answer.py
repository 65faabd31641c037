"""`ask`: the packed memory, or the answer with its citations."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.models import Answer
    from memcli.present.output import Output


def show_answer(out: Output, result: Answer, one_line: bool = False) -> None:
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
