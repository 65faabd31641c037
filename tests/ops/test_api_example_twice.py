"""The Python example of docs/python-api.md prints what its comments say, and running it
again stores nothing twice (a script that remembers the same things each run must not fill
the memory with copies)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli_runner import clean_env
from tests.ops.test_api import api_page_example


def run_example(folder: Path) -> str:
    env = clean_env(HOME=str(folder), XDG_CONFIG_HOME=str(folder / "config"),
                    MEMCLI_EMBEDDING_PROVIDER="none")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", api_page_example()], capture_output=True,
                          text=True, env=env, cwd=folder, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_example_twice(tmp_path: Path) -> None:
    first = run_example(tmp_path)
    again = run_example(tmp_path)
    assert again == first
    said = api_page_example().splitlines()
    printed = first.splitlines()
    # The line that prints the episode count shows what its comment says.
    comment = next(line for line in said if 'stats()["nodes"]["episode"]' in line)
    assert comment.split("#")[1].split()[0] in printed
    assert "2" in printed and "Alfama" in first
