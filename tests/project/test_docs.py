"""The reference in docs/ says what the CLI does: every command is in the command table, the
claims about shared options and new stores hold, and the agent recipe runs."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import REPO, Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer

DOCS = REPO / "docs"
LONGEST_CELL = 1000  # characters: longer belongs in paragraphs or a list


def section(page: str, title: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def command_paths() -> dict[str, Any]:
    """Every command `--help` shows, groups and their subcommands alike: `inspect node`..."""
    import typer.main

    from memcli.cli import app

    def walk(group: Any, prefix: str = "") -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, sub in getattr(group, "commands", {}).items():
            if not getattr(sub, "hidden", False):
                found[f"{prefix}{name}"] = sub
                found.update(walk(sub, f"{prefix}{name} "))
        return found

    return walk(typer.main.get_command(app))


def leaves() -> dict[str, Any]:
    return {name: cmd for name, cmd in command_paths().items() if not hasattr(cmd, "commands")}


def test_the_command_table_lists_every_command_and_subcommand() -> None:
    table = section("cli.md", "Commands")
    listed = set(re.findall(r"^\| `memcli ([a-z]+(?: [a-z]+)?)", table, re.M))
    paths = set(command_paths())
    assert {"inspect entity", "inspect stats", "config init", "eval chats"} <= paths
    assert paths <= listed, sorted(paths - listed)
    helps = Memcli()("--help").stdout
    assert all(f" {name.split()[0]} " in helps for name in listed), listed


def test_the_docs_name_every_command_without_the_shared_options_after_it() -> None:
    text = section("cli.md", "Commands").split("\n\n")
    claim = next(
        " ".join(p.split()) for p in text if "are also accepted after it" in " ".join(p.split())
    )
    claim = claim.split("are also accepted after it")[1]
    for name, command in leaves().items():
        opts = {opt for param in command.params for opt in param.opts}
        missing = [opt for opt in ("--db", "--space", "--json") if opt not in opts]
        if missing:
            assert f"`{name}`" in claim and all(f"`{o}`" in claim for o in missing), (name, claim)


def test_the_docs_name_every_command_that_creates_a_store(tmp_path: Path) -> None:
    from tests.reliability import write_config

    claim = section("cli.md", "Commands").split("create a database file")[0].rsplit("\n\n", 1)[1]
    creators = set(re.findall(r"`([a-z]+)`", claim))
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "new.db")
    cli.ok("add", "The spare key is under the blue flowerpot.")
    assert (tmp_path / "new.db").is_file() and "add" in creators, claim
    other = Memcli(config=cli.config, db=tmp_path / "other.db")
    assert other("add", "").exit_code == 4
    assert not (tmp_path / "other.db").exists()  # a failed add leaves no file behind


def test_the_agent_recipe_runs(
    tmp_path: Path, fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipes = section("recipes.md", "Recipes: cron and agents")
    block = re.search(r"```python\n(.*?)```", recipes, re.S)
    assert block is not None
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MEMCLI_CONFIG", str(config_file(tmp_path, fake_server, llm=False)))
    monkeypatch.setenv("MEMCLI_DB", str(tmp_path / "agent.db"))
    recipe: dict[str, Any] = {}
    exec(block.group(1), recipe)
    turn = {"role": "user", "content": "The spare key is under the blue flowerpot."}
    recipe["remember"]("c1", [{**turn, "timestamp": "2024-03-02T09:14:00"}])
    assert "[ep1] user: The spare key is under the blue flowerpot." in recipe["recall"]("key")


def test_no_table_cell_is_an_essay() -> None:
    for page in [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("|"):
                longest = max(len(cell) for cell in re.split(r"(?<!\\)\|", line))
                assert longest <= LONGEST_CELL, (page.name, line[:80])


def test_the_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#]+\.md)", index))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - {"index.md"}
    assert pages - linked == set()
