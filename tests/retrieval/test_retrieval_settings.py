"""The retrieval settings a person sets (a short section) and the strategy parameters that
live in code (memcli.retrieval.params), overridden under retrieval.tuning."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml

from memcli.config import RetrievalConfig, load_config
from memcli.config.schema import REMOVED_RETRIEVAL_KEYS
from memcli.errors import ConfigError
from memcli.retrieval import STRATEGY_MODULES, params_class
from memcli.retrieval.params import HybridParams
from memcli.retrieval.tuning import tuned
from tests.cli_runner import Memcli
from tests.graph_helpers import CONVERSATION, write_jsonl
from tests.paths import REPO

ROOT = REPO


def test_the_example_files_retrieval_section_is_short_and_strategy_free() -> None:
    section = yaml.safe_load((ROOT / "config.example.yaml").read_text())["retrieval"]
    assert len(section) <= 10
    parameters = {
        f.name
        for name in STRATEGY_MODULES
        if (cls := params_class(name)) is not None
        for f in dataclasses.fields(cls)
    }
    assert not set(section) & parameters and not set(section) & REMOVED_RETRIEVAL_KEYS


def test_an_old_file_with_removed_keys_loads_with_a_warning(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("retrieval:\n  k: 4\n  ppr_weight: 0.3\n  beta_role: 2\n")
    cfg = load_config(str(file), env={"MEMCLI_RETRIEVAL_SEEDS": "20"})
    assert cfg.retrieval == RetrievalConfig(k=4)
    [in_file, in_env] = cfg.notices
    assert str(file) in in_file and "beta_role, ppr_weight" in in_file and "ignored" in in_file
    assert "MEMCLI_RETRIEVAL_SEEDS" in in_env


def test_the_cli_says_so_on_stderr_and_goes_on(tmp_path: Path) -> None:
    config = tmp_path / "memcli.yaml"
    config.write_text(
        f"db: {tmp_path / 'm.db'}\nembedding:\n  provider: none\nretrieval:\n  topic_weight: 0\n"
    )
    cli = Memcli(config=config)
    result = cli.ok("ingest", write_jsonl(tmp_path / "c.jsonl", CONVERSATION))
    assert "memcli: warning:" in result.stderr and "topic_weight" in result.stderr
    shown = cli("--json", "config", "show")
    assert shown.exit_code == 0 and "topic_weight" not in shown.stdout
    assert json.loads(shown.stderr.splitlines()[0])["warning"].count("topic_weight") == 1


def test_tuning_overrides_a_strategys_parameters(tmp_path: Path) -> None:
    file = tmp_path / "c.yaml"
    file.write_text("retrieval:\n  tuning:\n    hybrid: {role: 0, candidates: 20}\n")
    cfg = load_config(str(file), env={})
    assert cfg.retrieval.tuning == {"hybrid": {"role": 0, "candidates": 20}}
    params = tuned(HybridParams, cfg.retrieval.tuning["hybrid"], "hybrid")
    assert (params.role, params.candidates, params.vector) == (0.0, 20, HybridParams().vector)
    env = {"MEMCLI_RETRIEVAL_TUNING": "gam: {anchors: 3}"}
    assert load_config(None, env=env).retrieval.tuning == {"gam": {"anchors": 3}}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"rol": 0}, "unknown parameter 'rol' (did you mean 'role'?)"),
        ({"candidates": 2.5}, "candidates: expected int, got 2.5"),
        ({"role": True}, "role: expected float, got True"),
        ({"vector": float("nan")}, "vector: expected float, got nan"),
        ({"candidates": -1}, "candidates must be at least 0, got -1"),
    ],
)
def test_bad_tuning_is_a_config_error_naming_the_parameters(given: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as err:
        tuned(HybridParams, given, "hybrid")
    assert "hybrid" in str(err.value)


def test_every_number_and_switch_of_hybrid_is_tuned_and_checked_alike() -> None:
    params = tuned(HybridParams, {"shape_parts": False, "rank_offset": 20, "wide": 2}, "hybrid")
    assert (params.shape_parts, params.rank_offset, params.wide) == (False, 20, 2)
    with pytest.raises(ConfigError, match="shape_parts: expected true or false, got 0"):
        tuned(HybridParams, {"shape_parts": 0}, "hybrid")
    with pytest.raises(ConfigError, match=re.escape("alias_share must be at least 0")):
        tuned(HybridParams, {"alias_share": -0.5}, "hybrid")


def test_ask_reports_a_bad_tuning_with_exit_3(tmp_path: Path) -> None:
    config = tmp_path / "memcli.yaml"
    config.write_text(
        f"db: {tmp_path / 'm.db'}\nembedding:\n  provider: none\n"
        "retrieval:\n  tuning:\n    hybrid: {rol: 0}\n"
    )
    cli = Memcli(config=config)
    cli.ok("ingest", write_jsonl(tmp_path / "c.jsonl", CONVERSATION))
    result = cli("ask", "--context-only", "marathon")
    assert result.exit_code == 3 and result.stdout == ""
    assert "retrieval.tuning.hybrid: unknown parameter 'rol'" in result.stderr
    assert "fix: the parameters of hybrid are:" in result.stderr
    assert cli("ask", "--context-only", "--strategy", "lexical", "marathon").exit_code == 0
