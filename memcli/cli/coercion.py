"""Converting option values without pydantic where nothing needs converting.

Typer converts every parameter's value through a pydantic TypeAdapter that it builds, on
first use, for each parameter of the command being run, absent ones included: importing
pydantic and building those adapters cost a short command (`memcli ask --context-only`)
more than its own work. Most values need no conversion at all: an absent option (None),
text for a text option, the count of a counter, a path for a path option. Those are taken
here; any other value goes to typer's own conversion, built at that moment, so every
rule and error message stays typer's.

This is the one place that leans on typer's parameter objects beyond its public API
(`type_descriptor`, the `_runtime_param` slot its conversion is kept in, and that
conversion's `coerce(value, param, ctx)`); where they are missing the parameters are left
alone, which costs time but changes nothing (tests/project/test_lazy_imports.py notices).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# A path option's checks as typer sets them by default: the path need not exist, and when it
# does it may be a file or a directory and must be readable.
_PLAIN_PATH = {
    "exists": False, "file_okay": True, "dir_okay": True, "writable": False,
    "readable": True, "resolve_path": False, "allow_dash": False, "path_type": None,
}  # fmt: skip


class Deferred:
    """One parameter's conversion: the plain cases here, the rest by typer."""

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        """The value as the command receives it."""
        if value is None:  # as typer's own conversion answers an absent value
            return () if param.multiple or param.nargs == -1 else None
        info = param.type_descriptor.parameter_info
        kind = param.type_descriptor.annotation
        plain = info.parser is None and not param.type_descriptor.is_choice
        if plain and kind is str and isinstance(value, str):
            return value
        if plain and kind is int and type(value) is int and info.min is None and info.max is None:
            return value
        if plain and kind is Path and isinstance(value, (str, Path)) and _plain_path(info, value):
            return Path(value)
        param._runtime_param = None  # typer's conversion from here on
        return param.get_runtime_param().coerce(value, param=param, ctx=ctx)


def _plain_path(info: Any, value: str | Path) -> bool:
    """Whether typer would take this path as it is: a path option with the default checks,
    naming nothing or something readable (else typer's conversion gives its own error)."""
    if any(getattr(info, name, None) != default for name, default in _PLAIN_PATH.items()):
        return False
    return not os.path.exists(value) or os.access(value, os.R_OK)


def defer_conversion(command: Any) -> None:
    """Let every parameter of a command tree (its --help options too) convert its values
    through `Deferred`."""
    import typer

    help_option = command.get_help_option(typer.Context(command))
    for param in [*getattr(command, "params", ()), help_option]:
        if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = Deferred()
    for sub in getattr(command, "commands", {}).values():
        defer_conversion(sub)
