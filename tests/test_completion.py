"""Shell completion: Typer's --show-completion script, and the completions it asks for."""

from __future__ import annotations

from tests.cli_runner import clean_env, run_process


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


def test_show_completion_prints_a_bash_script() -> None:
    result = run_process("--show-completion", "bash")
    assert result.returncode == 0, result.stderr
    assert "_memcli_completion" in result.stdout and "complete " in result.stdout


def test_commands_subcommands_and_options_complete() -> None:
    assert complete("memcli ex") == ["export"]
    assert complete("memcli config ") == ["show", "init"]
    assert "--episodes-only" in complete("memcli import --e")
    assert complete("memcli inspect n") == ["node"]
