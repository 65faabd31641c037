"""The value rules of the settings, declared without importing pydantic.

The settings are plain frozen dataclasses (memcli.config.schema) whose annotations carry
their rules as the markers below.
Pydantic applies them when it validates (memcli.config reads a file or the environment
through `TypeAdapter(Config)`), and builds its validators only then: a command run on the
defaults never imports it. Building a settings object in code checks its values too, but
only those that differ from the defaults, which are valid by construction.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")

NULL_WORDS = ("", "null", "none")


def null_word(value: Any) -> Any:
    """An environment variable can only say "no value" in words: '', 'null' or 'none'."""
    return None if isinstance(value, str) and value.lower() in NULL_WORDS else value


class Bounds:
    """Marks a number that must be at least `ge` (and at most `le`, when given)."""

    def __init__(self, ge: float, le: float | None = None) -> None:
        self.ge, self.le = ge, le

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        limits = {"ge": self.ge} if self.le is None else {"ge": self.ge, "le": self.le}
        return {**handler(source), **limits}


class NullWords:
    """Marks a text setting in which '', 'null' and 'none' mean no value."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(null_word, handler(source))


def path_list(value: Any) -> Any:
    """A list of directories or names; an environment variable gives them joined like $PATH."""
    value = null_word(value)
    if isinstance(value, str):
        return [part for part in value.split(os.pathsep) if part.strip()]
    return value


class PathList:
    """Marks a list setting that an environment variable gives joined like $PATH."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(path_list, handler(source))


def yaml_mapping(value: Any) -> Any:
    """A mapping; an environment variable gives it as YAML text (`hybrid: {candidates: 80}`)."""
    if isinstance(value, str):
        import yaml

        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError:
            return value  # not a mapping: validation says so
        return {} if value is None else value
    return value


class YamlMapping:
    """Marks a mapping setting that an environment variable gives as YAML text."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(yaml_mapping, handler(source))


class NotBlank:
    """Marks a name that must hold something besides spaces."""

    PATTERN = r"\S"

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return {**handler(source), "pattern": self.PATTERN}


def settings(config: dict[str, Any]) -> Callable[[type[T]], type[T]]:
    """Make a class a settings class, under `@dataclasses.dataclass(frozen=True)`: pydantic
    validates it with `config`, and its constructor checks the values that are not its
    defaults (the dataclass's __init__ calls the __post_init__ set here)."""

    def make(cls: type[T]) -> type[T]:
        cls.__pydantic_config__ = config  # type: ignore[attr-defined]
        cls.__post_init__ = _check_values  # type: ignore[attr-defined]
        return cls

    return make


def _check_values(self: Any) -> None:
    """Check (and convert, as validation does: "7" -> 7) every value that is not the
    field's default; a wrong one raises pydantic's ValidationError, a ValueError."""
    cls: type = type(self)
    for field in dataclasses.fields(self):
        value = getattr(self, field.name)
        if _is_default(field, value):
            continue
        checked = _checked_text(cls, field.name, value)
        if checked is _UNCHECKED:
            checked = _adapter(cls, field.name).validate_python(value)
        object.__setattr__(self, field.name, checked)


_UNCHECKED = object()


def _is_default(field: dataclasses.Field[Any], value: Any) -> bool:
    """Whether a value needs no check: the field's default, a section that is already a
    settings object (checked when it was made), or bookkeeping that is not a setting."""
    if not field.compare:
        return True
    factory = field.default_factory
    if factory is not dataclasses.MISSING:
        return isinstance(factory, type) and isinstance(value, factory)
    return type(value) is type(field.default) and value == field.default


def _checked_text(cls: type, name: str, value: Any) -> Any:
    """A text value checked without pydantic (the common case: `--db`, `--space`), or
    _UNCHECKED for anything else."""
    hint = _hints(cls)[name]
    marks = getattr(hint, "__metadata__", ())
    if not isinstance(value, str) or typing.get_origin(hint) is not typing.Annotated:
        return value if hint is str and isinstance(value, str) else _UNCHECKED
    if any(isinstance(m, NullWords) for m in marks):
        return null_word(value)
    if any(isinstance(m, NotBlank) for m in marks) and value.strip():
        return value
    return _UNCHECKED  # a blank name: pydantic's error says so


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


@cache
def _adapter(cls: type, name: str) -> Any:
    from pydantic import TypeAdapter

    hint = _hints(cls)[name]
    if dataclasses.is_dataclass(hint):  # a section brings its own config
        return TypeAdapter(hint)
    return TypeAdapter(hint, config=cls.__pydantic_config__)  # type: ignore[attr-defined]
