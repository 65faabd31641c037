"""Without psycopg every Postgres test skips, as the README's test command promises for a
clone with nothing optional installed (issue 37 item 1: one of them ran and failed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli_runner import REPO, clean_env
from tests.pg_server import REQUIRE_ENV


def _postgres_test_files() -> list[str]:
    return sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "tests").rglob("test_*.py")
        if "mark.postgres" in path.read_text(encoding="utf-8")
    )


def test_every_postgres_test_skips_where_psycopg_is_missing(tmp_path: Path) -> None:
    # A package of that name first on the path hides the installed driver from pytest and
    # from each memcli it starts.
    hidden = tmp_path / "hidden" / "psycopg"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("hidden by the test")\n')
    path = os.pathsep.join(p for p in (str(hidden.parent), os.environ.get("PYTHONPATH")) if p)
    env = clean_env(PYTHONPATH=path)
    env.pop(REQUIRE_ENV, None)
    files = _postgres_test_files()
    assert "tests/store/pg/test_postgres_store.py" in files
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "postgres", *files],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=600,
    )  # fmt: skip
    tail = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, result.stdout[-4000:]
    assert "skipped" in tail and "passed" not in tail and "failed" not in tail, tail
