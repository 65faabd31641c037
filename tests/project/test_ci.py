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


def test_ci_sets_no_variable_that_memcli_reads_as_a_setting() -> None:
    # memcli reads every MEMCLI_* variable as a setting and refuses unknown ones (exit 3):
    # a CI switch named so would make every command of the suite fail.
    import re

    text = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assigned = re.findall(r"(?:^|\s)(?:export\s+)?([A-Z][A-Z0-9_]*)=", text, re.M)
    assert assigned, "the CI switches are assigned as NAME=value"
    assert not [name for name in assigned if name.startswith("MEMCLI_")]
