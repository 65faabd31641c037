"""`config show` tells a value the file changes from one it spells out at its default (a
file made by `config init` sets every key)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_runner import Memcli


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
