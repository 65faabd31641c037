"""Variants of retrieval to compare in one run: a strategy plus settings overridden.

A variant is written `NAME=STRATEGY[:KEY=VALUE,KEY=VALUE...]`, e.g. `norole=hybrid:role=0`,
or just `STRATEGY` (named after it). Values are read as in a YAML config file (0, 0.5, true).
Every override goes through `with_overrides`, the one place that knows where a strategy's
parameters live: a key of the `retrieval` settings (k, pool, ...) sets that; any other key
is a parameter of the strategy (memcli.retrieval.params), set under
`retrieval.tuning.<strategy>` and checked against the strategy's parameters.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memcli.config import RetrievalConfig
from memcli.errors import ConfigError, UsageError

_NAME = re.compile(r"[\w.+-]+")


@dataclass(frozen=True)
class Variant:
    """A named strategy with some settings overridden (key -> value as written)."""

    name: str
    strategy: str
    overrides: tuple[tuple[str, str], ...] = ()

    @property
    def settings(self) -> dict[str, str]:
        """The overrides as a dict."""
        return dict(self.overrides)

    def spec(self) -> str:
        """The variant written back the way `parse_variant` reads it."""
        tail = ",".join(f"{k}={v}" for k, v in self.overrides)
        return f"{self.name}={self.strategy}" + (f":{tail}" if tail else "")


def parse_variant(spec: str) -> Variant:
    """A Variant from `NAME=STRATEGY[:KEY=VALUE,...]` or a bare `STRATEGY`."""
    name, eq, rest = spec.partition("=")
    strategy, _, settings = (rest if eq else spec).partition(":")
    name, strategy = name.strip(), strategy.strip()
    if not _NAME.fullmatch(name) or not _NAME.fullmatch(strategy):
        raise UsageError(
            f"bad variant {spec!r}",
            fix="write NAME=STRATEGY[:KEY=VALUE,...], e.g. norole=hybrid:role=0",
        )
    overrides = []
    for item in filter(None, (s.strip() for s in settings.split(","))):
        key, has_value, value = item.partition("=")
        if not has_value or not key.strip() or not value.strip():
            raise UsageError(f"bad setting {item!r} in variant {spec!r}", fix="write KEY=VALUE")
        overrides.append((key.strip(), value.strip()))
    return Variant(name, strategy, tuple(overrides))


def with_overrides(
    cfg: RetrievalConfig, overrides: Mapping[str, str], strategy: str | None = None
) -> RetrievalConfig:
    """The retrieval settings with `overrides` (key -> value text) applied and checked:
    settings of the section directly, the strategy's parameters under its tuning."""
    from memcli.retrieval import params_class
    from memcli.retrieval.tuning import tuned

    known = [f.name for f in dataclasses.fields(cfg) if f.name != "tuning"]
    strategy = strategy or cfg.strategy
    values: dict[str, Any] = {}
    tuning = {k: dict(v) for k, v in cfg.tuning.items()}
    for key, text in overrides.items():
        if key in known:
            values[key] = _value(text)
        else:
            tuning.setdefault(strategy, {})[key] = _value(text)
    cls = params_class(strategy)
    if strategy in tuning:
        if cls is None:
            raise ConfigError(
                f"strategy {strategy!r} has no parameters: {', '.join(tuning[strategy])}",
                fix=f"use a key of the retrieval section: {', '.join(known)}",
            )
        tuned(cls, tuning[strategy], strategy)  # unknown names and bad values fail here
        values["tuning"] = tuning
    try:
        return dataclasses.replace(cfg, **values)
    except ValueError as exc:  # the schema's own check (pydantic's ValidationError)
        raise ConfigError(f"bad retrieval override {dict(overrides)}: {exc}") from None


def _value(text: str) -> Any:
    """A setting's value read as a config file would read it."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text
