"""`ask`: the packed memory, or the answer with its citations."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.models import Answer, Hit
    from memcli.present.output import Output


def why_line(hit: Hit) -> str:
    """One hit, its score and (when explained) the score's parts and the path that
    brought it: `ep12 0.873 = full-text 0.41 + vector 0.30 … via ep3 > ep12`."""
    from memcli.retrieval.explain import label, ordered

    line = f"{hit.node.node_id} {hit.score:.3f}"
    if hit.why:
        line += " = " + " + ".join(f"{label(k)} {v:.3f}" for k, v in ordered(hit.why))
    if hit.via:
        line += " via " + " > ".join(hit.via)
    return line


def show_answer(out: Output, result: Answer, one_line: bool = False, explain: bool = False) -> None:
    """The packed context (or the answer with its citations); one line each in batch mode."""
    if out.json:
        out.record(result.to_dict())
        return
    if result.answer is not None:
        text = result.answer
        if result.citations:
            text += "\n\nsources: " + ", ".join(result.citations)
        if result.unsupported:
            where = "the memories it cites" if result.citations else "the memory it read"
            out.info(
                f"memcli: warning: {' and '.join(result.unsupported)}: not in {where}; "
                "the answer may be wrong (--context-only shows the memory)"
            )
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
    if explain and not one_line and result.hits:
        text += "\n\n## Why these hits\n" + "\n".join(why_line(h) for h in result.hits)
    if text or one_line:
        out.text(text)
