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
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    # each step without the environment settings before it (`REQUIRE_X=1 .venv/bin/...`)
    steps = [line[line.index(".venv/bin/") :].strip() for line in lines if ".venv/bin/" in line]
    assert ".venv/bin/mypy" in steps
    pytest = next(
        i for i, step in enumerate(steps) if step.startswith(".venv/bin/python -m pytest")
    )
    assert steps.index(".venv/bin/mypy") < pytest
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert any(dep.startswith("mypy") for dep in project["project"]["optional-dependencies"]["dev"])
    assert project["tool"]["mypy"]["files"] == ["memcli"]
