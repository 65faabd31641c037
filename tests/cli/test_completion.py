"""Shell completion: Typer's --show-completion script, and the completions it asks for."""

from __future__ import annotations

import shlex
import subprocess
import sys

from tests.cli_runner import REPO, clean_env, run_process


def complete(words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (a real process)."""
    env = clean_env(
        _MEMCLI_COMPLETE="complete_bash",
        COMP_WORDS=words,
        COMP_CWORD=str(len(words.split(" ")) - 1),
    )
    result = run_process(env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_show_completion_prints_the_script_for_the_calling_shell() -> None:
    # Typer detects the shell from the parent process: run memcli from a bash.
    command = f"{shlex.quote(sys.executable)} -m memcli --show-completion; exit $?"
    result = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=clean_env(), cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    assert "_memcli_completion" in result.stdout and "complete " in result.stdout


def test_commands_subcommands_and_options_complete() -> None:
    assert complete("memcli ex") == ["export"]
    assert complete("memcli config ") == ["show", "init"]
    assert "--episodes-only" in complete("memcli import --e")
    assert complete("memcli inspect n") == ["node"]
