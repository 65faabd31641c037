"""Strategy parameters as a person tunes them: `retrieval.tuning.<strategy>` checked and applied.

A strategy's parameters are a frozen dataclass (memcli.retrieval.params); an override names
one of its fields and gives a value of the field's type: true or false for a switch, a
number of at least 0 otherwise. Anything else is a ConfigError naming the parameters.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from memcli.errors import ConfigError, did_you_mean

P = TypeVar("P")


def tuned(cls: type[P], overrides: Mapping[str, Any] | None, strategy: str) -> P:
    """The strategy's parameters with `overrides` (name -> value) applied and checked."""
    if not overrides:
        return cls()
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, value in overrides.items():
        if name not in fields:
            raise ConfigError(
                f"retrieval.tuning.{strategy}: unknown parameter {name!r}"
                f"{did_you_mean(str(name), list(fields))}",
                fix=f"the parameters of {strategy} are: {', '.join(fields)}",
            )
        values[name] = _checked(strategy, name, hints[name], value)
    return cls(**values)


def _checked(strategy: str, name: str, typ: Any, value: Any) -> Any:
    """A switch's true/false, or a number of the parameter's type (an int is a float too),
    at least 0; else a ConfigError. (true/false are not numbers here, nor is NaN.)"""
    if typ is bool:
        if not isinstance(value, bool):
            raise ConfigError(
                f"retrieval.tuning.{strategy}.{name}: expected true or false, got {value!r}",
                fix="set it to true (on) or false (off), or remove it for the default",
            )
        return value
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or (typ is int and not isinstance(value, int)) or value != value:
        raise ConfigError(
            f"retrieval.tuning.{strategy}.{name}: expected {typ.__name__}, got {value!r}",
            fix=f"set it to a {typ.__name__}, or remove it for the default",
        )
    if value < 0:
        raise ConfigError(
            f"retrieval.tuning.{strategy}.{name} must be at least 0, got {value}",
            fix="set it to 0 or more, or remove it for the default",
        )
    return float(value) if typ is float else value
