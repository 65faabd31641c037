"""Loading settings: a YAML file and MEMCLI_* variables layered over the defaults.

The schema is in memcli.config.schema.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memcli.config.schema import (
    REMOVED_RETRIEVAL_KEYS,
    SECTIONS,
    Config,
    ConsolidationConfig,
    EmbeddingConfig,
    IngestConfig,
    LLMConfig,
    McpConfig,
    RetrievalConfig,
    default_db_path,
)
from memcli.config.secrecy import exposure
from memcli.errors import ConfigError, NotFound, did_you_mean
from memcli.text import hide_userinfo

ENV_PREFIX = "MEMCLI_"
# The schema is defined in memcli.config.schema and read from here.
__all__ = [
    "SECTIONS",
    "Config",
    "ConsolidationConfig",
    "EmbeddingConfig",
    "IngestConfig",
    "LLMConfig",
    "McpConfig",
    "RetrievalConfig",
    "default_db_path",
]


def user_config_path() -> Path:
    """Where a per-user config file is looked for."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("memcli", appauthor=False)) / "config.yaml"


# Set by load_config, never read from a file or the environment.
_NOT_KEYS = ("source_file", "notices")


def _keys(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name not in _NOT_KEYS]


def _unknown_key(key: Any, known: list[str], where: str) -> ConfigError:
    return ConfigError(
        f"{where}: unknown key {key!r}{did_you_mean(str(key), known)}",
        fix="see config.example.yaml for every key; API keys are never put in the file, "
        "name the environment variable that holds them with api_key_env",
    )


def _owner(loc: tuple[Any, ...]) -> type:
    """The settings class that holds the key at `loc` (Config for a top-level key)."""
    cls: type = Config
    for name in loc[:-1]:
        cls = typing.get_type_hints(cls)[name]
    return cls


def _type_name(typ: Any) -> str:
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    return (args[0] if args else typ).__name__


def _bounds(cls: type, name: str) -> tuple[float | None, float | None]:
    """The (ge, le) bounds declared on a field (its `Bounds`)."""
    rules = typing.get_type_hints(cls, include_extras=True)[name].__metadata__
    ge = next((r.ge for r in rules if getattr(r, "ge", None) is not None), None)
    le = next((r.le for r in rules if getattr(r, "le", None) is not None), None)
    return ge, le


def _out_of_range(loc: tuple[Any, ...], value: Any, where: str) -> ConfigError:
    """`retrieval.k must be at least 1, got 0` / `... must be in [0, 1], got 2.0`, with a
    fix naming where the value was set (`where`: the file, or a MEMCLI_* variable)."""
    from pydantic import TypeAdapter

    cls, name = _owner(loc), loc[-1]
    typ = typing.get_type_hints(cls)[name]
    shown = TypeAdapter(typ).validate_python(value)  # as converted: 0 -> 0.0 for a float
    ge, le = _bounds(cls, name)
    rule = f"in [{ge:g}, {le:g}]" if le is not None else f"at least {ge:g}"
    key = ".".join(map(str, loc))
    fix = (
        f"set {where} to a value {rule}, or unset it"
        if where.startswith(ENV_PREFIX)
        else f"set {key} to a value {rule} in {where}"
    )
    return ConfigError(f"{key} must be {rule}, got {shown}", fix=fix)


_UNKNOWN = ("unexpected_keyword_argument", "extra_forbidden", "invalid_key")
_NOT_MAPPING = ("dataclass_type", "dataclass_args_type", "model_type")
_RANGE = ("greater_than_equal", "less_than_equal")
_ABSENT = object()
_KIND_WORDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "str": "text"}


def _rank(error: Mapping[str, Any]) -> int:
    """Which error to report first: a typo, then a misplaced section, a type, a range."""
    kind = error["type"]
    return 0 if kind in _UNKNOWN else 1 if kind in _NOT_MAPPING else 3 if kind in _RANGE else 2


def _message(error: Mapping[str, Any], where: str, env_var: str | None) -> ConfigError:
    """One pydantic error as the ConfigError a person reads; `env_var` is the MEMCLI_*
    variable that gave the bad value, when the environment did (not the file `where`)."""
    loc, value = tuple(error["loc"]), error["input"]
    path = ".".join([where, *map(str, loc[:-1])])
    if error["type"] in _UNKNOWN:
        return _unknown_key(loc[-1], _keys(_owner(loc)), path)
    if error["type"] in _NOT_MAPPING:
        return ConfigError(f"{path}.{loc[-1]}: expected a mapping, got {value!r}")
    if error["type"] in _RANGE:
        return _out_of_range(loc, value, env_var or where)
    if error["type"] == "literal_error":
        return _not_a_choice(loc, value, env_var)
    if error["type"] == "string_pattern_mismatch":  # a blank name
        key = ".".join(map(str, loc))
        fix = f"set {key} to a name in {where}, or remove it for the default"
        fix = f"unset {env_var}, or set it to a name" if env_var else fix
        return ConfigError(f"{key} must not be blank, got {value!r}", fix=fix)
    kind = _type_name(typing.get_type_hints(_owner(loc))[loc[-1]])
    words = _KIND_WORDS.get(kind, f"a {kind}")
    if env_var:
        fix = f"set {env_var} to {words}, or unset it"
        return ConfigError(f"{env_var}: expected {kind}, got {value!r}", fix=fix)
    fix = f"set {'.'.join(map(str, loc))} to {words} in {where}"
    return ConfigError(f"{path}.{loc[-1]}: expected {kind}, got {value!r}", fix=fix)


def _not_a_choice(loc: tuple[Any, ...], value: Any, env_var: str | None) -> ConfigError:
    """A setting outside its fixed set of values, listing them."""
    name = ".".join(map(str, loc))
    choices = typing.get_args(typing.get_type_hints(_owner(loc))[loc[-1]])
    listed = ", ".join(choices)
    return ConfigError(
        f"{name} must be one of {listed}, got {value!r}",
        fix=f"set {env_var or name} to one of: {listed}",
    )


def _env_var(loc: tuple[Any, ...], given: list[tuple[str, dict[str, Any]]]) -> str | None:
    """The MEMCLI_* variable behind the value at `loc`, when the strongest source that
    sets it is the environment."""
    for source, layer in reversed(given):
        node: Any = layer
        for part in loc:
            node = node.get(part, _ABSENT) if isinstance(node, Mapping) else _ABSENT
        if node is not _ABSENT:
            return ENV_PREFIX + "_".join(map(str, loc)).upper() if source == "env" else None
    return None


def _validate(
    data: Mapping[str, Any], where: str, given: list[tuple[str, dict[str, Any]]] | None = None
) -> Config:
    """Settings from nested plain data, or the ConfigError of the first problem found.
    `given`: the sources merged into `data` (see `layers`), to name the one at fault."""
    from pydantic import TypeAdapter, ValidationError

    for name in _NOT_KEYS:
        if name in data:
            raise _unknown_key(name, _keys(Config), where)
    try:
        return TypeAdapter(Config).validate_python(data)
    except ValidationError as exc:
        first = min(exc.errors(), key=_rank)
        raise _message(first, where, _env_var(tuple(first["loc"]), given or [])) from None


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _env_layer(env: Mapping[str, str]) -> dict[str, Any]:
    """MEMCLI_DB, MEMCLI_SPACE, MEMCLI_LLM_MODEL ... as a nested mapping."""
    layer: dict[str, Any] = {}
    hints = typing.get_type_hints(Config)
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or name == ENV_PREFIX + "CONFIG":
            continue
        key = name[len(ENV_PREFIX) :].lower()
        section, _, rest = key.partition("_")
        if section == "retrieval" and rest in REMOVED_RETRIEVAL_KEYS:
            continue  # read with a warning (_removed_keys)
        if section in SECTIONS and rest:
            known = _keys(hints[section])
            if rest not in known:
                raise _unknown_key(rest, known, f"environment variable {name}")
            layer.setdefault(section, {})[rest] = value
        elif key in hints and key not in SECTIONS and key not in _NOT_KEYS:
            layer[key] = value
        else:
            raise _unknown_key(key, _keys(Config), f"environment variable {name}")
    return layer


def find_config_file(explicit: str | None, env: Mapping[str, str]) -> Path | None:
    """The config file to read: --config, MEMCLI_CONFIG, ./memcli.yaml, then the user's."""
    chosen = explicit or env.get(ENV_PREFIX + "CONFIG")
    if chosen:
        path = Path(chosen).expanduser()
        if path.is_dir():
            raise NotFound(
                f"config file {chosen} is a directory",
                fix=f"pass the YAML file itself, e.g. --config {path / 'memcli.yaml'}",
            )
        if not path.is_file():
            raise NotFound(
                f"config file {chosen} does not exist",
                fix="check the path given with --config or MEMCLI_CONFIG",
            )
        return path
    for candidate in (Path("memcli.yaml"), user_config_path()):
        if candidate.is_file():
            return candidate
    return None


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a config file, turning YAML errors into ConfigError with the position."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        pos = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(
            f"{path}{pos}: invalid YAML ({getattr(exc, 'problem', exc)})",
            fix="correct the YAML near that line (indent nested keys, quote values that "
            "contain ': ' or start with a special character); config.example.yaml shows "
            "every key",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot read config ({exc})",
            fix="make it a readable UTF-8 YAML file, or point --config at another one",
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: the top level must be a mapping of keys",
            fix="write `key: value` lines, a section's keys indented under it "
            "(config.example.yaml shows every key)",
        )
    return data


def layers(
    config_path: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[Path | None, list[tuple[str, dict[str, Any]]]]:
    """The config file used, and the settings each source gives, weakest first:
    ("file", ...), ("env", ...), ("flag", ...); what none gives is a default."""
    env = os.environ if env is None else env
    path = find_config_file(config_path, env)
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    return path, [
        ("file", read_yaml(path) if path else {}),
        ("env", _env_layer(env)),
        ("flag", flags),
    ]


def load_config(
    config_path: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the effective settings from defaults, a file, the environment and flags."""
    path, given = layers(config_path, env, overrides)
    notices = _removed_keys(path, given, os.environ if env is None else env)
    exposed = exposure(path, given[0][1])  # a secret in a file others may read
    notices += (exposed,) if exposed else ()
    merged: dict[str, Any] = {}
    for _, layer in given:
        merged = _merge(merged, layer)
    cfg = _plain(merged) if path is None else None
    if cfg is None:
        cfg = _validate(merged, str(path) if path else "config", given)
    return dataclasses.replace(cfg, source_file=str(path) if path else None, notices=notices)


def _removed_keys(
    path: Path | None, given: list[tuple[str, dict[str, Any]]], env: Mapping[str, str]
) -> tuple[str, ...]:
    """Take the retrieval keys that strategy parameters replaced out of the file's layer
    (the environment's were skipped by _env_layer), and say which were set and where."""
    notices = []
    file_layer = given[0][1]
    section = file_layer.get("retrieval")
    if isinstance(section, dict):
        old = sorted(k for k in section if k in REMOVED_RETRIEVAL_KEYS)
        if old:
            file_layer["retrieval"] = {k: v for k, v in section.items() if k not in old}
            notices.append(
                f"{path}: retrieval keys no longer read, ignored: {', '.join(old)}; strategy "
                "parameters live in code now: delete these lines (docs/retrieval.md, "
                "'Tuning a strategy', shows how to override one under retrieval.tuning)"
            )
    prefix = ENV_PREFIX + "RETRIEVAL_"
    names = sorted(n for n in env if n.startswith(prefix) and n[len(prefix):].lower()
                   in REMOVED_RETRIEVAL_KEYS)  # fmt: skip
    if names:
        notices.append(
            f"environment variables no longer read, ignored: {', '.join(names)}; use "
            "MEMCLI_RETRIEVAL_TUNING (docs/retrieval.md, 'Tuning a strategy')"
        )
    return tuple(notices)


def _plain(data: Mapping[str, Any]) -> Config | None:
    """The settings when nothing but the database and the space is given, as text that
    needs no conversion (the usual command line): made without pydantic, whose validators
    cost more than the rest of a short command. None when there is more to check."""
    if set(data) - {"db", "space"} or not all(isinstance(v, str) for v in data.values()):
        return None
    if not str(data.get("space", "default")).strip():
        return None  # a blank space: validation reports it in its words
    return Config(**data)


def masked(cfg: Config, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The config as a plain dict with secrets hidden, for `memcli config`."""
    env = os.environ if env is None else env
    out = dataclasses.asdict(cfg)
    out.pop("source_file", None)
    out.pop("notices", None)
    out["db"] = hide_userinfo(cfg.db_path)  # a postgresql:// URL's password hidden
    for section in ("embedding", "llm"):
        sec = out[section]
        if sec.get("url"):
            sec["url"] = hide_userinfo(sec["url"])
        sec["api_key"] = "*** (set)" if env.get(sec["api_key_env"]) else "(not set)"
    if out["mcp"]["token"]:
        out["mcp"]["token"] = "*** (set)"
    return out
