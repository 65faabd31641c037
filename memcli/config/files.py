"""`memcli config init` and `memcli config show`: writing the commented starter file, and
telling where each effective setting came from (default, file, env or flag)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memcli.config import SECTIONS, Config, layers, masked, user_config_path
from memcli.errors import NotFound, UsageError

TEMPLATE = "config.example.yaml"  # shipped inside the memcli package


def template_text() -> str:
    """The commented config file listing every key with its default."""
    from importlib import resources

    return resources.files("memcli").joinpath(TEMPLATE).read_text(encoding="utf-8")


def init_config(path: str | None = None, *, force: bool = False) -> Path:
    """Write the commented config to `path` (default: the user config dir); never replace
    an existing file unless `force`. Return where it was written."""
    target = Path(path).expanduser() if path else user_config_path()
    if target.is_dir():
        raise NotFound(
            f"{target} is a directory", fix=f"name the file itself, e.g. {target / 'memcli.yaml'}"
        )
    if target.exists() and not force:
        raise UsageError(
            f"{target} already exists; it was left as it is",
            fix="pass --force to replace it with the commented defaults, or edit it",
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.tmp")
        temp.write_text(template_text(), encoding="utf-8")
        os.replace(temp, target)
    except OSError as exc:
        raise NotFound(
            f"cannot write {target}: {exc.strerror or exc}",
            fix="pass a path in a directory you can write to: memcli config init PATH",
        ) from None
    return target


def flatten(values: Mapping[str, Any]) -> dict[str, Any]:
    """Settings as dotted keys (`retrieval.k`), one level of sections deep."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key in SECTIONS and isinstance(value, Mapping):
            out.update({f"{key}.{name}": inner for name, inner in value.items()})
        else:
            out[key] = value
    return out


def value_sources(
    config_path: str | None,
    overrides: Mapping[str, Any],
    shown: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Dotted key of each shown (flattened, masked) setting -> where its value came from:
    the strongest of flag, env and file that sets it (to something other than null), else
    default. An API key is never
    read from the file: it is `env` when the variable named by api_key_env is set."""
    _, given = layers(config_path, env, overrides)
    out = dict.fromkeys(shown, "default")
    for source, layer in given:
        for key, value in flatten(layer).items():
            if key in out and value is not None:  # `key: null` asks for the default
                out[key] = source
    for key, value in shown.items():
        if key.endswith(".api_key"):
            out[key] = "env" if str(value).startswith("***") else "default"
    defaults = flatten(masked(Config(), env))
    for key, source in out.items():
        # A file that spells out a default (as `config init` writes every key) sets
        # nothing you would notice: said apart from the values you changed.
        if source == "file" and key in defaults and shown[key] == defaults[key]:
            out[key] = "file (= default)"
    return out
