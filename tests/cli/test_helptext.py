"""Help paragraphs wrapped in the source come out as one paragraph; examples stay as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memcli.cli.helptext import paragraphs
from tests.cli_runner import Memcli
from tests.reliability import write_config


def test_prose_is_joined_and_indented_blocks_are_kept() -> None:
    text = """First line
    of a paragraph.

    [b]Examples[/b]

      memcli a
      memcli b
    """
    assert (
        paragraphs(text)
        == "First line of a paragraph.\n\n[b]Examples[/b]\n\n  memcli a\n  memcli b"
    )


def test_every_command_shows_its_prose_as_paragraphs() -> None:
    import typer.main

    from memcli.cli import app

    def commands(group: object) -> list[object]:
        found = []
        for sub in getattr(group, "commands", {}).values():
            found += [sub, *commands(sub)]
        return found

    every = commands(typer.main.get_command(app))
    assert len(every) > 15
    for command in every:
        text = getattr(command, "help", None) or ""
        for block in text.split("\n\n"):
            if not block.startswith(" "):  # prose: one line per paragraph
                assert "\n" not in block, (command.name, block)


def test_every_surface_names_every_strategy() -> None:
    """`ask --help`, the Python API and the MCP tools' schema name all the strategies."""
    import re
    import typing

    import typer.main

    from memcli import Memory
    from memcli.cli import app
    from memcli.mcp import server as mcp_server
    from memcli.retrieval import STRATEGY_MODULES

    ask = typer.main.get_command(app).commands["ask"]  # type: ignore[attr-defined]
    option = next(p for p in ask.params if p.name == "strategy")
    mcp_field = typing.get_args(mcp_server.Strategy)[1]
    surfaces = {
        "ask --help": option.help,
        "Memory.ask": Memory.ask.__doc__,
        "mcp": mcp_field.description,
        "config.example.yaml": _comment_above("memcli/config.example.yaml", "  strategy:"),
    }
    for surface, text in surfaces.items():
        named = set(re.findall(r"\w+", text or ""))
        assert set(STRATEGY_MODULES) <= named, (surface, set(STRATEGY_MODULES) - named)


def test_consolidate_help_names_every_stage_it_skips_without_an_llm() -> None:
    import typer.main

    from memcli.cli import app
    from memcli.consolidate.registry import LLM_ONLY

    command = typer.main.get_command(app).commands["consolidate"]  # type: ignore[attr-defined]
    sentence = (command.help or "").split("Without an LLM")[1].split("skipped")[0]
    assert set(re.findall(r"\w+", sentence)) >= LLM_ONLY, sentence


def test_the_mcp_k_default_is_the_configured_one() -> None:
    import typing

    from memcli.mcp import server as mcp_server

    description = typing.get_args(mcp_server.K)[1].description
    assert "retrieval.k" in description and "10" not in description, description


def test_every_surface_names_every_input_format() -> None:
    """`ingest --format`, the Python API and the MCP ingest tool name all the readers."""
    import asyncio

    import typer.main

    from memcli import Memory
    from memcli.cli import app
    from memcli.mcp import server as mcp_server
    from memcli.readers import FORMATS

    ingest = typer.main.get_command(app).commands["ingest"]  # type: ignore[attr-defined]
    option = next(p for p in ingest.params if "--format" in p.opts)
    tools = asyncio.run(mcp_server.build_server(None).list_tools())  # type: ignore[arg-type]
    surfaces = {
        "ingest --format": option.help,
        "Memory.ingest": Memory.ingest.__doc__,
        "mcp ingest": next(t.description for t in tools if t.name == "ingest"),
    }
    for surface, text in surfaces.items():
        named = set(re.findall(r"\w+", text or ""))
        assert set(FORMATS) <= named, (surface, set(FORMATS) - named)


def _comment_above(path: str, key: str) -> str:
    """The comment lines right above the line that starts with `key` in a YAML file."""
    from tests.cli_runner import REPO

    lines = (REPO / path).read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(key))
    above = []
    for line in reversed(lines[:at]):
        if not line.strip().startswith("#"):
            break
        above.append(line)
    return "\n".join(reversed(above))


# Help pages show value types (`<path>`, a repeatable `<str>...`), never typer's `<bool>`,
# `<list[...]>` or `<int> ` labels.


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
