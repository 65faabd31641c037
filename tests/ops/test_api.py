"""The Python API: `from memcli import Memory`, typed methods, the docs example, cheap import."""

from __future__ import annotations

import inspect
import io
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import memcli
from memcli.errors import InvalidInput, LLMNotConfigured, NodeNotFound, NotFound, UsageError
from memcli.llm.local import bundled_model_dir
from tests.cli_runner import REPO, clean_env

PUBLIC_METHODS = (
    "open", "add", "ingest", "ask", "recall", "consolidate", "prune", "stats", "node_view",
    "export_graph", "reindex", "list_memories", "export_space", "import_dump", "warm_up", "close",
)  # fmt: skip


@pytest.fixture
def no_vectors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Settings from the environment only: full-text search, no model, no user config."""
    for key in [k for k in os.environ if k.startswith("MEMCLI_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("MEMCLI_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in memcli.__all__:
        assert getattr(memcli, name) is not None, name
    assert sorted(memcli.__all__) == sorted(dir(memcli))
    with pytest.raises(AttributeError):
        memcli.Nothing  # noqa: B018


def test_methods_are_typed_without_catch_all_keywords() -> None:
    from memcli.progress import Progress

    names = {n: getattr(memcli, n) for n in memcli.__all__ if n != "__version__"}
    for name in PUBLIC_METHODS:
        method = getattr(memcli.Memory, name)
        assert method.__doc__, name
        hints = typing.get_type_hints(method, localns={**names, "Progress": Progress})
        for param in inspect.signature(method).parameters.values():
            assert param.kind is not inspect.Parameter.VAR_KEYWORD, (name, param)
            assert param.kind is not inspect.Parameter.VAR_POSITIONAL, (name, param)
            assert param.name in ("self", "cls") or param.name in hints, (name, param.name)
            assert hints.get(param.name) is not typing.Any, (name, param.name)
        assert "return" in hints, name


def test_importing_memcli_loads_nothing_else() -> None:
    code = "import sys, memcli; print(sorted(m for m in sys.modules if m.startswith(('memcli', 'pydantic', 'numpy', 'sqlite'))))"  # noqa: E501
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=clean_env(), cwd=REPO
    )
    assert out.stdout.strip() == "['memcli']", out.stderr


def test_open_add_recall_stats_node_and_prune(no_vectors: Path) -> None:
    with memcli.Memory.open("m.db", space="trips") as mem:
        first = mem.add("We booked the Alfama hotel in Lisbon", role="user", time="2024-05-03")
        again = mem.add("We booked the Alfama hotel in Lisbon", role="user", time="2024-05-03")
        mem.add("The talk is on the second day", role="user", session="lisbon")
        assert isinstance(first, memcli.AddReport) and first.new and not again.new
        assert again.node_id == first.node_id == "ep1"
        assert first.session == "memcli-add:2024-05-03" and first.timestamp == "2024-05-03T00:00:00"
        answer = mem.recall("Which hotel did we book?")
        assert isinstance(answer, memcli.Answer) and answer.answer is None
        assert answer.hits[0].node.node_id == "ep1" and "Alfama" in answer.context
        stats = mem.stats()
        assert stats["space"] == "trips" and stats["nodes"] == {"episode": 2}
        assert stats["db"] == "m.db" and (no_vectors / "m.db").is_file()
        view = mem.node_view("ep2")
        assert view["session"] == "lisbon" and view["provenance"]["files"] == ["memcli-add"]
        report = mem.prune(memcli.Selection(sessions=("lisbon",)), dry_run=True)
        assert isinstance(report, memcli.PruneReport) and report.removed == {"episode": 1}
        assert mem.prune(memcli.Selection(nodes=("ep2",))).removed == {"episode": 1}
        assert mem.stats()["nodes"] == {"episode": 1}


def test_library_errors_are_memcli_errors(no_vectors: Path) -> None:
    with pytest.raises(NotFound):
        memcli.Memory.open("missing.db", create=False)
    assert not (no_vectors / "missing.db").exists()
    with pytest.raises(NotFound), memcli.Memory.open("new.db") as fresh:
        fresh.ingest("no-such-chat.jsonl")
    assert not (no_vectors / "new.db").exists()  # as the CLI: a failed ingest leaves no file
    with pytest.raises(UsageError):
        memcli.Memory.open("m.db", space=" ")
    with memcli.Memory.open("m.db") as mem:
        with pytest.raises(InvalidInput):
            mem.add("   ")
        with pytest.raises(UsageError, match="--time"):
            mem.add("x", time="not a date")
        mem.add("something to find")
        with pytest.raises(LLMNotConfigured) as no_llm:
            mem.ask("what?")
        assert "Memory.recall" in (no_llm.value.fix or "")  # not only the CLI's flag
        with pytest.raises(NodeNotFound):
            mem.node_view("ep99")
        with pytest.raises(memcli.MemcliError):
            mem.recall("x", strategy="nope")
        for question, k in [("", None), ("  \n", None), ("x", 0), ("x", -5)]:
            with pytest.raises(UsageError):  # as `memcli ask` refuses them, not a crash
                mem.recall(question, k=k)


def test_a_mistyped_space_is_an_error_not_an_empty_result(no_vectors: Path) -> None:
    with memcli.Memory.open("m.db", space="trips") as mem:
        mem.add("We booked the Alfama hotel", role="user")
    with memcli.Memory.open("m.db", space="trip") as typo:
        reads = [
            lambda: typo.recall("Which hotel?"),
            typo.stats,
            lambda: typo.export_graph("json"),
            lambda: typo.list_memories(memcli.ListQuery()),
            lambda: typo.export_space(io.StringIO()),
        ]
        for read in reads:
            with pytest.raises(NotFound, match="no space 'trip'") as missing:
                read()
            assert "trips" in str(missing.value) + (missing.value.fix or "")
        typo.add("A new space starts with its first memory", role="user")
        assert typo.recall("new space").hits, "once written to, the space is known"
    with memcli.Memory.open("empty.db", space="any") as empty:
        assert empty.recall("anything").hits == []  # an empty store: nothing, no error


def test_ingest_takes_one_path_or_several(no_vectors: Path) -> None:
    (no_vectors / "a.jsonl").write_text('{"role": "user", "content": "first file"}\n')
    (no_vectors / "b.jsonl").write_text('{"role": "user", "content": "second file"}\n')
    with memcli.Memory.open("m.db") as mem:
        assert mem.ingest(no_vectors / "a.jsonl").new == 1
        report = mem.ingest(["a.jsonl", Path("b.jsonl")])
        assert isinstance(report, memcli.IngestReport) and (report.new, report.skipped) == (1, 1)
        done = mem.consolidate(flush=True, no_llm=True)
        assert isinstance(done, memcli.ConsolidateReport) and not done.locked


def test_the_cli_commands_call_the_memory_methods() -> None:
    """The CLI is a thin layer: each command's body calls the Memory method of its name."""
    calls = {
        "add": "mem.add(", "ingest": "mem.ingest(", "ask": "mem.ask(",
        "consolidate": "mem.consolidate(", "prune": "mem.prune(", "inspect": "mem.stats(",
        "reindex": "mem.reindex(", "list": "mem.list_memories(", "transfer": "mem.export_space(",
    }  # fmt: skip
    for command, call in calls.items():
        source = (REPO / "memcli" / "cli" / f"{command}.py").read_text()
        assert call in source, command
    assert "mem.node_view(" in (REPO / "memcli" / "cli" / "inspect.py").read_text()
    assert "mem.import_dump(" in (REPO / "memcli" / "cli" / "transfer.py").read_text()


def api_page_example() -> str:
    """The first ```python block of docs/python-api.md."""
    page = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", page, re.S)
    assert match, "docs/python-api.md has no python block"
    return match.group(1)


@pytest.mark.skipif(bundled_model_dir() is None, reason="install memcli[model] for the model")
def test_the_api_page_example_runs_verbatim(tmp_path: Path) -> None:
    env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = subprocess.run(
        [sys.executable, "-c", api_page_example()],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "Alfama" in run.stdout and (tmp_path / "memory.db").exists()


# The Python example of docs/python-api.md prints what its comments say, and running it
# again stores nothing twice (a script that remembers the same things each run must not fill
# the memory with copies).


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
