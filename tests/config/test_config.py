"""Config precedence, validation and the example file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memcli.config import Config, load_config, masked
from memcli.errors import ConfigError, NotFound
from tests.paths import REPO

ROOT = REPO


def test_example_file_documents_every_default() -> None:
    cfg = load_config(str(ROOT / "config.example.yaml"), env={})
    assert dataclasses.replace(cfg, source_file=None) == Config() and cfg.notices == ()


def test_every_key_appears_in_example_file() -> None:
    import yaml

    data = yaml.safe_load((ROOT / "config.example.yaml").read_text())
    advanced = {"retrieval.tuning"}  # documented in docs/retrieval.md, not the example file
    for f in dataclasses.fields(Config):
        if f.name in ("source_file", "notices"):
            continue
        assert f.name in data
        sub = f.default_factory() if callable(f.default_factory) else None
        if dataclasses.is_dataclass(sub):
            keys = {g.name for g in dataclasses.fields(sub)} - {
                a.split(".")[1] for a in advanced if a.startswith(f"{f.name}.")
            }
            assert set(data[f.name]) == keys


def test_precedence_flag_over_env_over_file(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("space: from_file\nretrieval:\n  k: 3\n  word_budget: 500\n")
    env = {"MEMCLI_SPACE": "from_env", "MEMCLI_RETRIEVAL_K": "4"}
    cfg = load_config(str(file), env=env, overrides={"space": "from_flag"})
    assert cfg.space == "from_flag"
    assert cfg.retrieval.k == 4
    assert cfg.retrieval.word_budget == 500
    assert cfg.source_file == str(file)


def test_memcli_config_env_names_the_file(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("llm:\n  model: qwen\n")
    assert load_config(None, env={"MEMCLI_CONFIG": str(file)}).llm.model == "qwen"


def test_local_memcli_yaml_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "memcli.yaml").write_text("space: here\n")
    monkeypatch.chdir(tmp_path)
    assert load_config(None, env={}).space == "here"


def test_missing_explicit_file_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        load_config(str(tmp_path / "nope.yaml"), env={})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("retrieval: [1, 2\n", "invalid YAML"),
        ("retrieval:\n  kk: 3\n", "did you mean 'k'"),
        ("retrieval:\n  k: many\n", "expected int"),
        ("retrieval:\n  k: 0\n", "at least 1"),
        ("embedding: 5\n", "expected a mapping"),
        ("- a\n- b\n", "must be a mapping"),
        ("llm:\n  api_key: sk-123\n", "api_key_env"),
    ],
)
def test_bad_config_is_a_config_error(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "c.yaml"
    file.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(str(file), env={})
    assert message in str(info.value)


def test_unknown_env_variable_is_named() -> None:
    with pytest.raises(ConfigError, match="MEMCLI_RETRIEVAL_KAY"):
        load_config(None, env={"MEMCLI_RETRIEVAL_KAY": "1"})


def test_masked_hides_secrets() -> None:
    cfg = load_config(None, env={"MEMCLI_LLM_URL": "https://user:pw@example.com/v1"})
    shown = masked(cfg, env={"OPENAI_API_KEY": "sk-secret"})
    assert "pw" not in str(shown) and "sk-secret" not in str(shown)
    assert shown["llm"]["api_key"] == "*** (set)"
