"""The cli/ package: Typer stays inside it, only through Typer's public API."""

from __future__ import annotations

import ast
from pathlib import Path

from typer.testing import CliRunner

from memcli.cli import app
from tests.paths import REPO

PACKAGE = REPO / "memcli"


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return names


def test_typer_is_imported_only_by_the_cli_package_and_never_privately() -> None:
    for path in PACKAGE.rglob("*.py"):
        typer_names = {n for n in imported_modules(path) if n.split(".")[0] in ("typer", "click")}
        if path.parent.name != "cli":
            assert not typer_names, path
        assert not [n for n in typer_names if "._" in n or n.startswith("click")], path


def test_commands_keep_their_order_and_shared_options() -> None:
    panel = CliRunner().invoke(app, ["--help"]).stdout.split("Commands")[1]
    listed = [line.split()[1] for line in panel.splitlines() if line[2:3].isalpha()]
    assert listed == [
        "ingest", "add", "ask", "consolidate", "reindex", "prune", "list", "export", "import",
        "mcp", "ui", "doctor", "config", "inspect", "eval"
    ]  # fmt: skip
    prune = CliRunner().invoke(app, ["prune", "--help"]).stdout
    assert prune.index("--vacuum") < prune.index("--db") < prune.index("--space")
    assert "WHOLE" in prune  # prune's own --space help, not the shared one
    reindex = CliRunner().invoke(app, ["reindex", "--help"]).stdout
    flowing = " ".join(reindex.replace("│", " ").split())  # help text wraps with the width
    assert "--db" in reindex and "--json" in reindex and "reindex re-embeds every" in flowing


def test_a_parser_error_names_the_command_and_exits_2() -> None:
    result = CliRunner().invoke(app, ["inspect", "node"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("memcli: error: missing argument")
    assert "fix: see `memcli inspect node --help`" in result.stderr
