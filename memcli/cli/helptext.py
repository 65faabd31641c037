"""Help text written as wrapped source lines, shown as paragraphs.

Typer's rich help keeps every newline of a help text, so a paragraph wrapped at the source's
line length comes out broken mid-sentence at the terminal's width. `paragraphs` joins the
lines of each prose paragraph and leaves indented blocks (examples) as written.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar


def paragraphs(text: str) -> str:
    """`text` with each prose paragraph on one line; indented blocks kept line by line."""
    blocks = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        block if block.startswith(" ") else " ".join(line.strip() for line in block.splitlines())
        for block in blocks
    )


F = TypeVar("F", bound=Callable[..., Any])


def prose(fn: F) -> F:
    """Decorator (under Typer's): the function's docstring shown as paragraphs."""
    fn.__doc__ = paragraphs(fn.__doc__ or "")
    return fn
