"""The README's 60-second tour runs as written, and every command it lists exists."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import REPO, Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer

README = (REPO / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def tour_commands() -> list[list[str]]:
    """The tour's command lines, comments dropped, as argument lists after `memcli`."""
    block = re.search(r"```bash\n(.*?)```", section("A 60-second tour"), re.S)
    assert block is not None
    lines = [line.split("  #")[0].strip() for line in block.group(1).splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("memcli ")]


def test_the_tour_runs_as_written(
    tmp_path: Path, fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # the tour runs from the repository's directory
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False), db=tmp_path / "tour.db")
    commands = tour_commands()
    assert len(commands) >= 8
    for args in commands:
        args = [str(tmp_path / a) if a.endswith(".jsonl.gz") else a for a in args]
        result = cli.ok(*args)
        if args[0] == "ingest":
            assert result.stdout.startswith("16 new episodes in 3 sessions")
        if args[:2] == ["list", "--grep"]:
            assert "find a hotel near" in result.stdout
        if args[0] == "list" and "--limit" in args:  # the comment shows the first line
            assert result.stdout.startswith("ep16  2024-03-23 11:41"), result.stdout


def test_every_command_the_readme_lists_exists() -> None:
    listed = set(re.findall(r"^\| `memcli ([a-z]+)", section("Commands"), re.M))
    assert {"list", "export", "config"} <= listed
    helps = Memcli()("--help").stdout
    assert all(f" {name} " in helps for name in listed), listed


def test_the_agent_recipe_runs(
    tmp_path: Path, fake_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    block = re.search(r"```python\n(.*?)```", section("Recipes: cron and agents"), re.S)
    assert block is not None
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MEMCLI_CONFIG", str(config_file(tmp_path, fake_server, llm=False)))
    monkeypatch.setenv("MEMCLI_DB", str(tmp_path / "agent.db"))
    recipe: dict[str, Any] = {}
    exec(block.group(1), recipe)
    turn = {"role": "user", "content": "The spare key is under the blue flowerpot."}
    recipe["remember"]("c1", [{**turn, "timestamp": "2024-03-02T09:14:00"}])
    assert "[ep1] user: The spare key is under the blue flowerpot." in recipe["recall"]("key")


def test_the_readme_names_every_command_without_the_shared_options_after_it() -> None:
    import typer.main

    from memcli.cli import app

    def leaves(group: Any, prefix: str = "") -> dict[str, Any]:
        found = {}
        for name, sub in getattr(group, "commands", {}).items():
            found.update(leaves(sub, f"{prefix}{name} ") if hasattr(sub, "commands") else {})
            if not hasattr(sub, "commands"):
                found[f"{prefix}{name}"] = sub
        return found

    claim = section("Commands").split("are also accepted after it")[1].split("\n\n")[0]
    claim = " ".join(claim.split())
    for name, command in leaves(typer.main.get_command(app)).items():
        opts = {opt for param in command.params for opt in param.opts}
        missing = [opt for opt in ("--db", "--space", "--json") if opt not in opts]
        if missing:
            assert f"`{name}`" in claim and all(f"`{o}`" in claim for o in missing), (name, claim)


def test_the_readme_names_every_command_that_creates_a_store(tmp_path: Path) -> None:
    from tests.reliability import write_config

    claim = section("Commands").split("create a database file")[0].rsplit("\n\n", 1)[1]
    creators = set(re.findall(r"`([a-z]+)`", claim))
    cli = Memcli(config=write_config(tmp_path), db=tmp_path / "new.db")
    cli.ok("add", "The spare key is under the blue flowerpot.")
    assert (tmp_path / "new.db").is_file() and "add" in creators, claim
    other = Memcli(config=cli.config, db=tmp_path / "other.db")
    assert other("add", "").exit_code == 4
    assert not (tmp_path / "other.db").exists()  # a failed add leaves no file behind
