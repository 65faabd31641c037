"""The value rules of the settings, checked by pydantic, reported in memcli's words."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from memcli.config import Config, RetrievalConfig, load_config
from memcli.errors import ConfigError


def error_of(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> str:
    file = tmp_path / "c.yaml"
    file.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(str(file), env=env or {})
    return str(info.value).splitlines()[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("retrieval:\n  k: 0\n", "retrieval.k must be at least 1, got 0"),
        ("llm:\n  timeout: 0\n", "llm.timeout must be at least 0.001, got 0.0"),
        ("llm:\n  temperature: -1\n", "llm.temperature must be at least 0, got -1.0"),
        (
            "consolidation:\n  link_threshold: 2\n",
            "consolidation.link_threshold must be in [0, 1], got 2.0",
        ),
        (
            "consolidation:\n  boundary_min_depth: .nan\n",
            "consolidation.boundary_min_depth must be in [0, 1], got nan",
        ),
        ("consolidation:\n  keywords: -1\n", "consolidation.keywords must be at least 0, got -1"),
        ("embedding:\n  max_retries: -2\n", "embedding.max_retries must be at least 0, got -2"),
    ],
)
def test_out_of_range_values_name_the_key_and_the_rule(
    tmp_path: Path, text: str, message: str
) -> None:
    assert error_of(tmp_path, text) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("retrieval:\n  k: 2.5\n", "c.yaml.retrieval.k: expected int, got 2.5"),
        ("retrieval:\n  k: .inf\n", "c.yaml.retrieval.k: expected int, got inf"),
        ("llm:\n  model: [a]\n", "c.yaml.llm.model: expected str, got ['a']"),
        ("llm:\n  model: null\n", "c.yaml.llm.model: expected str, got None"),
        ("llm: null\n", "c.yaml.llm: expected a mapping, got None"),
        ("spaec: x\n", "c.yaml: unknown key 'spaec' (did you mean 'space'?)"),
        ("source_file: x\n", "c.yaml: unknown key 'source_file'"),
        ("retrieval:\n  1: x\n", "c.yaml.retrieval: unknown key 1"),
    ],
)
def test_wrong_types_and_keys(tmp_path: Path, text: str, message: str) -> None:
    assert error_of(tmp_path, text).endswith(message)


def test_a_typo_is_reported_before_the_errors_it_may_explain(tmp_path: Path) -> None:
    text = "retrieval:\n  k: many\n  pol: 3\n  word_budget: -7\n"
    assert "unknown key 'pol' (did you mean 'pool'?)" in error_of(tmp_path, text)


def test_environment_values_are_converted_and_null_words_clear_a_setting() -> None:
    env = {"MEMCLI_RETRIEVAL_K": " 7 ", "MEMCLI_LLM_URL": "null", "MEMCLI_LLM_MODEL": "12"}
    cfg = load_config(None, env=env)
    assert cfg.retrieval.k == 7 and cfg.llm.url is None and cfg.llm.model == "12"
    assert load_config(None, env={"MEMCLI_DB": ""}).db is None


def test_settings_are_frozen_and_replace_checks_the_rules() -> None:
    cfg = Config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.space = "other"  # type: ignore[misc]
    with pytest.raises(ValueError):
        dataclasses.replace(cfg.retrieval, k=0)
    assert dataclasses.replace(cfg.retrieval, k=3) == RetrievalConfig(k=3)


@pytest.mark.parametrize(
    ("env", "message", "fix"),
    [
        (
            {"MEMCLI_RETRIEVAL_K": "abc"},
            "MEMCLI_RETRIEVAL_K: expected int, got 'abc'",
            "set MEMCLI_RETRIEVAL_K to a whole number, or unset it",
        ),
        (
            {"MEMCLI_RETRIEVAL_K": "0"},
            "retrieval.k must be at least 1, got 0",
            "set MEMCLI_RETRIEVAL_K to a value at least 1, or unset it",
        ),
        (
            {"MEMCLI_EMBEDDING_BACKEND": "x"},
            "embedding.backend must be one of onnx, sentence-transformers, got 'x'",
            "set MEMCLI_EMBEDDING_BACKEND to one of: onnx, sentence-transformers",
        ),
    ],
)
def test_a_bad_environment_value_is_blamed_on_its_variable_not_the_file(
    tmp_path: Path, env: dict[str, str], message: str, fix: str
) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("retrieval:\n  k: 5\n")  # the file is fine: the variable overrides it
    with pytest.raises(ConfigError) as info:
        load_config(str(file), env=env)
    assert (info.value.message, info.value.fix) == (message, fix)


def test_a_bad_file_value_says_what_to_change_in_which_file(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    for text, fix in [
        ("retrieval:\n  k: 0\n", f"set retrieval.k to a value at least 1 in {file}"),
        ("retrieval:\n  k: many\n", f"set retrieval.k to a whole number in {file}"),
    ]:
        file.write_text(text)
        with pytest.raises(ConfigError) as info:
            load_config(str(file), env={"MEMCLI_RETRIEVAL_POOL": "80"})
        assert info.value.fix == fix


@pytest.mark.parametrize(("text", "env"), [("space: ''\n", {}), ("", {"MEMCLI_SPACE": " "})])
def test_a_blank_space_is_a_config_error_not_a_space_no_flag_can_name(
    tmp_path: Path, text: str, env: dict[str, str]
) -> None:
    file = tmp_path / "c.yaml"
    file.write_text(text)
    with pytest.raises(ConfigError, match="space must not be blank") as info:
        load_config(str(file), env=env)
    assert ("MEMCLI_SPACE" in (info.value.fix or "")) == bool(env)
