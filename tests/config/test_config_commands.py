"""`memcli config init` (the commented starter file) and `memcli config show` (each value
with its source: default, file, env or flag)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from memcli.config import Config, load_config
from memcli.config.files import template_text
from tests.cli_runner import Memcli


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Memcli:
    """memcli with its user config and data dirs inside tmp_path, run from tmp_path."""
    monkeypatch.chdir(tmp_path)
    for name in ("MEMCLI_CONFIG", "MEMCLI_DB", "MEMCLI_SPACE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return Memcli()


def user_file(tmp_path: Path) -> Path:
    return tmp_path / "xdg-config" / "memcli" / "config.yaml"


def test_init_writes_the_commented_defaults_where_memcli_looks(cli: Memcli, tmp_path: Path) -> None:
    result = cli.ok("config", "init")
    written = user_file(tmp_path)
    assert result.stdout == f"wrote {written}\n"
    text = written.read_text(encoding="utf-8")
    assert text == template_text()
    assert sum(line.lstrip().startswith("#") for line in text.splitlines()) > 30  # commented
    loaded = load_config(str(written), env={})
    assert dataclasses.replace(loaded, source_file=None) == Config()
    shown = cli.ok("config", "show")
    assert shown.stderr.startswith(f"# from {written}")  # found without --config


def test_init_never_replaces_a_file_without_force(cli: Memcli, tmp_path: Path) -> None:
    written = user_file(tmp_path)
    cli.ok("config", "init")
    written.write_text("space: mine\n", encoding="utf-8")
    result = cli("config", "init")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"memcli: error: {written} already exists")
    assert "fix: pass --force" in result.stderr
    assert written.read_text(encoding="utf-8") == "space: mine\n"
    cli.ok("config", "init", "--force")
    assert written.read_text(encoding="utf-8") == template_text()


def test_init_to_a_path_and_bad_paths(cli: Memcli, tmp_path: Path) -> None:
    assert cli.json("config", "init", "here.yaml")[0] == {"written": "here.yaml"}
    assert (tmp_path / "here.yaml").read_text(encoding="utf-8") == template_text()
    result = cli("config", "init", str(tmp_path))
    assert result.exit_code == 4 and "is a directory" in result.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    result = cli("config", "init", str(blocker / "config.yaml"))
    assert result.exit_code == 4 and "cannot write" in result.stderr and "fix:" in result.stderr
    assert not user_file(tmp_path).exists()


def test_show_names_the_source_of_each_value(
    cli: Memcli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "memcli.yaml"  # found in the working directory
    file.write_text("space: from-file\ndb: null\nretrieval:\n  k: 3\n  word_budget: 500\n")
    monkeypatch.setenv("MEMCLI_RETRIEVAL_K", "7")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-shown")
    [shown] = cli.json("config", "show", "--db", "flag.db")
    sources = shown["sources"]
    assert (shown["db"], sources["db"]) == ("flag.db", "flag")
    assert (shown["space"], sources["space"]) == ("from-file", "file")
    assert (shown["retrieval"]["k"], sources["retrieval.k"]) == (7, "env")
    assert (shown["retrieval"]["word_budget"], sources["retrieval.word_budget"]) == (500, "file")
    assert sources["llm.model"] == "default" and sources["llm.api_key"] == "env"
    assert set(sources) >= {f"embedding.{f.name}" for f in dataclasses.fields(Config().embedding)}
    assert cli.json("--space", "s", "config", "show")[0]["sources"]["space"] == "flag"

    text = cli.ok("config", "show").stdout
    assert "sk-never-shown" not in text
    lines = {line.split(":")[0].strip(): line for line in text.splitlines()}
    assert lines["k"].endswith("# env") and lines["space"].endswith("# file")
    assert lines["db"].endswith("# default") and lines["retrieval"] == "retrieval:"
    assert cli.ok("config").stdout == text  # bare `config` shows the same


def test_show_without_any_file(cli: Memcli, tmp_path: Path) -> None:
    result = cli.ok("--json", "config")
    shown = json.loads(result.stdout)
    assert shown["source_file"] is None and set(shown["sources"].values()) == {"default"}
    assert shown["db"] == str(tmp_path / "xdg-data" / "memcli" / "memory.db")


def test_help_has_examples(cli: Memcli) -> None:
    for args in (["config"], ["config", "show"], ["config", "init"]):
        text = cli.ok(*args, "--help").stdout
        assert "Examples" in text and "memcli config" in text


# `config show` tells a value the file changes from one it spells out at its default (a
# file made by `config init` sets every key).


def test_values_the_file_leaves_at_their_default_are_marked(tmp_path: Path) -> None:
    cli = Memcli()
    config = tmp_path / "memcli.yaml"
    cli.ok("config", "init", config)
    text = config.read_text().replace("  k: 10 ", "  k: 7  ", 1)
    config.write_text(text)
    assert "  k: 7" in text
    [shown] = Memcli(config=config).json("config", "show")
    sources = shown["sources"]
    assert sources["retrieval.k"] == "file"
    assert sources["retrieval.pool"] == "file (= default)"
    assert sources["prompts_dir"] == "default"  # null in the file asks for the default
    lines = Memcli(config=config).ok("config", "show").stdout.splitlines()
    assert any(line.startswith("  k: 7") and line.endswith("# file") for line in lines)
    assert any(
        line.startswith("  pool: 60") and line.endswith("# file (= default)") for line in lines
    )
    assert json.dumps(sources).count('"file"') == 1
