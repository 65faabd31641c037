"""CI checks what it says: lint, types, then the README's test command, with tools that the
[dev] extra installs."""

from __future__ import annotations

import sys

from tests.cli_runner import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def test_ci_type_checks_the_library_with_the_dev_extra() -> None:
    steps = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.startswith(".venv/bin/")
    ]
    assert ".venv/bin/mypy" in steps
    assert steps.index(".venv/bin/mypy") < steps.index(".venv/bin/python -m pytest")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(dep.startswith("mypy") for dep in project["project"]["optional-dependencies"]["dev"])
    assert project["tool"]["mypy"]["files"] == ["memcli"]
