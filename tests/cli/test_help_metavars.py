"""Help pages show value types (`<path>`, a repeatable `<str>...`), never typer's `<bool>`,
`<list[...]>` or `<int> ` labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.reliability import write_config


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    """memcli over tmp_path/m.db with embeddings off."""
    write_config(tmp_path)
    return Memcli(config=tmp_path / "memcli.yaml", db=tmp_path / "m.db")


@pytest.mark.parametrize("command", [[], ["ask"], ["prune"], ["ingest"], ["inspect", "graph"]])
def test_help_shows_no_bool_or_list_metavars(cli: Memcli, command: list[str]) -> None:
    page = cli.ok(*command, "--help").stdout
    for typer_label in ("<bool>", "<list[", "<int> "):
        assert typer_label not in page, (command, typer_label)


def test_help_still_shows_value_types(cli: Memcli) -> None:
    assert "<path>" in cli.ok("--help").stdout
    assert "<str>..." in cli.ok("prune", "--help").stdout  # a repeatable option
