"""The one way tests run memcli: in-process through Typer's CliRunner (`Memcli`), or as a real
process (`run_process`) with the tester's own MEMCLI_* settings kept out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from click.testing import Result
from typer.testing import CliRunner

from memcli.cli import app
from tests.paths import REPO


class Memcli:
    """memcli in-process with fixed leading options. A call gives click's Result: the exit
    code, stdout and stderr apart.

        cli = Memcli(config=tmp_path / "memcli.yaml", db=tmp_path / "m.db")
        cli.ok("ingest", "chat.jsonl")
        [record] = cli.json("ask", "--context-only", "hotel")
    """

    def __init__(
        self,
        *,
        config: Path | str | None = None,
        db: Path | str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.config = Path(config) if config is not None else None
        self.db = Path(db) if db is not None else None
        self.env = dict(env or {})
        self._runner = CliRunner()

    def argv(self, *args: object) -> list[str]:
        """The full command line: --config and --db (when set) before `args`."""
        lead = ["--config", str(self.config)] if self.config is not None else []
        lead += ["--db", str(self.db)] if self.db is not None else []
        return [*lead, *map(str, args)]

    def __call__(
        self, *args: object, input: str | None = None, env: Mapping[str, str] | None = None
    ) -> Result:
        return self._runner.invoke(
            app, self.argv(*args), input=input, env={**self.env, **(env or {})}
        )

    def ok(self, *args: object, input: str | None = None) -> Result:
        """Run and assert exit code 0 (the failure message shows stderr)."""
        result = self(*args, input=input)
        assert result.exit_code == 0, (self.argv(*args), result.stderr)
        return result

    def json(self, *args: object, input: str | None = None) -> list[Any]:
        """Run with --json, assert success, and parse each line of stdout."""
        result = self.ok("--json", *args, input=input)
        return [json.loads(line) for line in result.stdout.splitlines()]


def ctrl_c_ready() -> None:
    """`preexec_fn` of a subprocess a test stops with SIGINT: Ctrl-C handled as at a
    terminal, even when the tests run as a background job (`cmd &` without job control
    starts its processes with SIGINT ignored, and Python then keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any MEMCLI_* settings of the person running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env["HOME"] = env.get("HOME", "/nonexistent")
    env.update(extra)
    return env


def run_process(
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m memcli ARGS` in a subprocess and capture its streams."""
    return subprocess.run(
        [sys.executable, "-m", "memcli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env if env is not None else clean_env(),
        cwd=cwd or REPO,
    )
