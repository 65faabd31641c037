"""Settings: YAML file -> frozen dataclasses. Precedence: flag > MEMCLI_* env > file > default."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcli.errors import ConfigError, NotFound
from memcli.models import EDGE_TYPES

ENV_PREFIX = "MEMCLI_"


def default_db_path() -> str:
    """The store's default location in the user's data directory."""
    from platformdirs import user_data_dir

    return str(Path(user_data_dir("memcli", appauthor=False)) / "memory.db")


def user_config_path() -> Path:
    """Where a per-user config file is looked for."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("memcli", appauthor=False)) / "config.yaml"


def _check_positive(obj: Any, names: tuple[str, ...], minimum: float = 1) -> None:
    """Reject numeric settings below `minimum` with the key's name."""
    section = type(obj).__name__.removesuffix("Config").lower()
    for name in names:
        value = getattr(obj, name)
        if value < minimum:
            raise ConfigError(f"{section}.{name} must be at least {minimum}, got {value}")


def _check_choice(obj: Any, name: str, choices: tuple[str, ...]) -> None:
    """Reject a setting outside its fixed set of values, listing them."""
    value = getattr(obj, name)
    if value not in choices:
        section = type(obj).__name__.removesuffix("Config").lower()
        raise ConfigError(
            f"{section}.{name} must be one of {', '.join(choices)}, got {value!r}",
            fix=f"set {section}.{name} to one of: {', '.join(choices)}",
        )


@dataclass(frozen=True)
class EmbeddingConfig:
    provider: str = "local"  # local | ollama | openai | none
    model: str = "all-MiniLM-L6-v2"
    url: str | None = None  # server address; None = the provider's usual one
    api_key_env: str = "OPENAI_API_KEY"  # name of the env var holding the key (openai)
    batch_size: int = 64
    timeout: float = 60.0
    max_retries: int = 3
    # The local provider (memcli/llm/local.py, onnx_embed.py, model_files.py):
    backend: str = "onnx"  # onnx (no torch) | sentence-transformers (memcli[torch])
    model_dir: str | None = None  # model.safetensors, tokenizer.json, config.json; None = find
    offline: bool = False  # never download model files (HF_HUB_OFFLINE=1 counts too)
    download_url: str = "https://huggingface.co"  # where a missing model is fetched (or a mirror)
    cache_dir: str | None = None  # downloads and built graphs; None = the platform cache dir
    threads: int = 0  # onnxruntime threads; 0 = one per CPU

    def __post_init__(self) -> None:
        _check_positive(self, ("batch_size",))
        _check_positive(self, ("max_retries", "threads"), 0)
        _check_positive(self, ("timeout",), 0.001)
        _check_choice(self, "backend", ("onnx", "sentence-transformers"))


@dataclass(frozen=True)
class LLMConfig:
    provider: str = "none"  # ollama | openai | none
    model: str = ""
    url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    timeout: float = 120.0
    max_retries: int = 3
    concurrency: int = 2

    def __post_init__(self) -> None:
        _check_positive(self, ("concurrency",))
        _check_positive(self, ("max_retries", "temperature"), 0)
        _check_positive(self, ("timeout",), 0.001)


@dataclass(frozen=True)
class RetrievalConfig:
    strategy: str = "hybrid"
    k: int = 10  # hits returned
    pool: int = 60  # hits ranked for packing the context (at least k)
    word_budget: int = 1000  # words of packed context
    candidates: int = 50  # candidates taken from each signal before fusion
    lexical_weight: float = 0.5  # share of normalised BM25 in the fused similarity
    max_facts: int = 60
    max_reflections: int = 20
    max_episodes: int = 80
    # Graph strategies (hybrid, dwpr, gam): seeds, expansion and Personalized PageRank.
    seeds: int = 40  # top candidates that seed PageRank, weighted by similarity squared
    expand_depth: int = 2  # hops from the seeds into the local subgraph
    max_subgraph: int = 3000  # nodes at most in one query's local subgraph
    hub_threshold: int = 50  # nodes with more edges pass on only threshold/degree of mass
    damping: float = 0.85  # probability that the walk follows an edge rather than restart
    ppr_weight: float = 0.1  # hybrid: similarity + ppr_weight·PageRank, both max-normalised
    reply_share: float = 0.9  # the turn after a question gets this share of its similarity
    topic_weight: float = 0.3  # hybrid, gam: a memory gains this × its segment's similarity
    edge_next: float = 0.8  # PageRank weight per edge type
    edge_part_of: float = 0.5
    edge_related: float = 0.5
    edge_derived_from: float = 0.8
    edge_derived_from_fact: float = 0.5
    edge_has_concept: float = 0.8
    edge_about_concept: float = 0.8
    edge_mentions: float = 0.5
    edge_relation: float = 0.5
    edge_supersedes: float = 0.5
    dwpr_seeds: int = 10  # dwpr: seeds per aspect (segments, facts/entities, episodes)
    dwpr_damping: float = 0.5  # dwpr: follow-an-edge probability
    gam_anchors: int = 5  # gam: topic anchors found by similarity before RELATED expansion
    beta_time: float = 1.4  # hybrid, gam: boost when a temporal question meets a dated memory
    beta_role: float = 1.4  # hybrid, gam: boost when the question names the memory's speaker
    gam_beta_conf: float = 1.2  # gam: boost for a derived memory believed >= gam_min_belief
    gam_min_belief: float = 0.8

    def __post_init__(self) -> None:
        _check_positive(self, ("k", "pool", "word_budget", "candidates"))
        if not 0.0 <= self.lexical_weight <= 1.0:
            raise ConfigError(
                f"retrieval.lexical_weight must be in [0, 1], got {self.lexical_weight}"
            )
        _check_positive(self, ("max_facts", "max_reflections", "max_episodes"), 0)
        _check_positive(self, ("seeds", "max_subgraph", "dwpr_seeds"))
        _check_positive(
            self, ("expand_depth", "hub_threshold", "ppr_weight", "topic_weight", "gam_anchors"), 0
        )
        _check_positive(self, tuple(f"edge_{t.lower()}" for t in EDGE_TYPES), 0)
        _check_positive(self, ("beta_time", "beta_role", "gam_beta_conf"), 0)
        for name in ("damping", "dwpr_damping", "gam_min_belief", "reply_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                value = getattr(self, name)
                raise ConfigError(f"retrieval.{name} must be in [0, 1], got {value}")

    def type_weights(self) -> dict[str, float]:
        """PageRank weight of each edge type, from the edge_* settings."""
        return {t: getattr(self, f"edge_{t.lower()}") for t in EDGE_TYPES}


@dataclass(frozen=True)
class ConsolidationConfig:
    buffer_tokens: int = 2048  # an open session buffer is segmented once it passes this
    chunk_tokens: int = 500  # new episodes per fact-extraction prompt
    segment_min_turns: int = 3  # no topic segment shorter than this (unless a buffer is)
    boundary_window: int = 3  # turns on each side of a gap compared by the similarity rule
    boundary_min_depth: float = 0.15  # smallest similarity dip that counts as a topic change
    summary_words: int = 60  # length of an extractive segment summary
    keywords: int = 5  # keywords kept per segment
    link_top_k: int = 5  # similar older segments shown to the topic-link judge
    link_threshold: float = 0.6  # RELATED edge when the judge's confidence reaches this (τ)
    similar_context_k: int = 5  # older episodes / facts / reflections given as prompt context
    reflect_batch: int = 20  # new facts per reflection prompt
    concepts_per_segment: int = 3  # keyword concepts chosen per segment without an LLM
    concept_max_df_share: float = 0.05  # a keyword in more episodes than this is too generic
    concept_merge_threshold: float = 0.9  # cosine above which two concepts are merged

    def __post_init__(self) -> None:
        _check_positive(
            self,
            ("buffer_tokens", "chunk_tokens", "segment_min_turns", "boundary_window"),
        )
        _check_positive(self, ("summary_words", "link_top_k", "reflect_batch"))
        _check_positive(self, ("keywords", "concepts_per_segment", "similar_context_k"), 0)
        for name in (
            "boundary_min_depth",
            "link_threshold",
            "concept_max_df_share",
            "concept_merge_threshold",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"consolidation.{name} must be in [0, 1], got {value}")


@dataclass(frozen=True)
class Config:
    db: str | None = None  # None = default_db_path()
    space: str = "default"
    prompts_dir: str | None = None  # a directory whose prompt files override the built-in ones
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    source_file: str | None = field(default=None, compare=False)  # which file was read

    @property
    def db_path(self) -> str:
        """The database file to open."""
        return self.db or default_db_path()


SECTIONS = {
    f.name for f in dataclasses.fields(Config) if dataclasses.is_dataclass(f.default_factory)
}


def _field_type(cls: type, name: str) -> Any:
    return typing.get_type_hints(cls)[name]


def _coerce(value: Any, typ: Any, where: str) -> Any:
    """Turn a YAML or env value into the field's type, or raise ConfigError."""
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("", "null", "none")):
            return None
        return _coerce(value, args[0], where)
    try:
        if typ is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if typ is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if typ is float:
            return float(value)
        if typ is str:
            if isinstance(value, (dict, list)):
                raise ValueError(value)
            return str(value)
    except (TypeError, ValueError):
        name = getattr(typ, "__name__", str(typ))
        raise ConfigError(f"{where}: expected {name}, got {value!r}") from None
    return value


def _unknown_key(key: str, known: list[str], where: str) -> ConfigError:
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ConfigError(
        f"{where}: unknown key {key!r}{hint}",
        fix="see config.example.yaml for every key; API keys are never put in the file, "
        "name the environment variable that holds them with api_key_env",
    )


def _build(cls: type, data: Mapping[str, Any], where: str) -> Any:
    known = {f.name: f for f in dataclasses.fields(cls) if f.name != "source_file"}
    values: dict[str, Any] = {}
    for key, raw in data.items():
        if key not in known:
            raise _unknown_key(key, list(known), where)
        typ = _field_type(cls, key)
        if dataclasses.is_dataclass(typ):
            if not isinstance(raw, Mapping):
                raise ConfigError(f"{where}.{key}: expected a mapping, got {raw!r}")
            values[key] = _build(typ, raw, f"{where}.{key}")
        else:
            values[key] = _coerce(raw, typ, f"{where}.{key}")
    return cls(**values)


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
        if section in SECTIONS and rest:
            known = [f.name for f in dataclasses.fields(hints[section])]
            if rest not in known:
                raise _unknown_key(rest, known, f"environment variable {name}")
            layer.setdefault(section, {})[rest] = value
        elif key in hints and key not in SECTIONS and key != "source_file":
            layer[key] = value
        else:
            raise _unknown_key(
                key, [k for k in hints if k != "source_file"], f"environment variable {name}"
            )
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
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    return data


def load_config(
    config_path: str | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the effective settings from defaults, a file, the environment and flags."""
    env = os.environ if env is None else env
    path = find_config_file(config_path, env)
    data = read_yaml(path) if path else {}
    merged = _merge(data, _env_layer(env))
    merged = _merge(merged, {k: v for k, v in (overrides or {}).items() if v is not None})
    cfg = _build(Config, merged, str(path) if path else "config")
    return dataclasses.replace(cfg, source_file=str(path) if path else None)


_USERINFO = re.compile(r"(//)[^/@\s]+@")


def masked(cfg: Config, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The config as a plain dict with secrets hidden, for `memcli config`."""
    env = os.environ if env is None else env
    out = dataclasses.asdict(cfg)
    out.pop("source_file", None)
    out["db"] = cfg.db_path
    for section in ("embedding", "llm"):
        sec = out[section]
        if sec.get("url"):
            sec["url"] = _USERINFO.sub(r"\1***@", sec["url"])
        sec["api_key"] = "*** (set)" if env.get(sec["api_key_env"]) else "(not set)"
    return out
