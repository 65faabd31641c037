"""A model that cannot be had fails in a second or two with one error and its fix, not after
a minute of retries: a server nobody listens on, a host that never answers the connection,
and a local embedding model that is not on this machine."""

from __future__ import annotations

import importlib.util
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_runner import Memcli, clean_env, run_process
from tests.fakeserver import refused_url
from tests.paths import EXAMPLE
from tests.reliability import write_config


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A loopback address whose connections are never accepted: the listener's backlog is
    full, so the kernel drops every new SYN and a client waits for its connect timeout."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for sock in (*fillers, listener):
            sock.close()


def _ask_with_llm(tmp_path: Path, provider: str, url: str, timeout: float = 120) -> tuple:
    write_config(tmp_path, llm={"provider": provider, "model": "m", "url": url, "timeout": timeout})
    cli = Memcli(config=tmp_path / "memcli.yaml", db=tmp_path / "m.db")
    cli.ok("-q", "ingest", EXAMPLE)
    started = time.monotonic()
    result = cli("ask", "when is the conference?")
    return result, time.monotonic() - started


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_a_refused_llm_gets_one_fast_retry(tmp_path: Path, provider: str) -> None:
    result, seconds = _ask_with_llm(tmp_path, provider, refused_url())
    assert result.exit_code == 5, result.stderr
    first = result.stderr.splitlines()[0]
    assert "connection refused (after 2 attempts)" in first, first
    assert "\n  fix: " in result.stderr
    assert seconds < 3  # was about 5 s: four attempts with backoff


@pytest.mark.parametrize("provider", ["ollama", "openai"])
def test_connecting_has_its_own_short_timeout(
    tmp_path: Path, provider: str, silent_url: str
) -> None:
    """llm.timeout (how long a reply may take) is 60 s; a connection gets a few seconds."""
    result, seconds = _ask_with_llm(tmp_path, provider, silent_url, timeout=60)
    assert result.exit_code == 5, result.stderr
    first = result.stderr.splitlines()[0]
    assert "no connection within 2 s (after 2 attempts)" in first, first
    assert seconds < 10


needs_st = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None,
    reason="the sentence-transformers backend is not installed",
)


def _ingest_with_model(tmp_path: Path, **embedding: object) -> tuple:
    write_config(tmp_path, embedding={"provider": "local", **embedding})
    env = clean_env(HF_HOME=str(tmp_path / "hf"))  # an empty Hugging Face cache
    env.pop("HF_ENDPOINT", None)
    env.pop("HF_HUB_OFFLINE", None)
    started = time.monotonic()
    result = run_process(
        "--config", str(tmp_path / "memcli.yaml"), "--db", str(tmp_path / "m.db"),
        "ingest", str(EXAMPLE), env=env, timeout=60,
    )  # fmt: skip
    return result, time.monotonic() - started


@needs_st
@pytest.mark.parametrize("model", ["all-mpnet-base-v2", "no-such-embedding-model"])
def test_a_model_not_here_and_no_hub_fails_at_once(tmp_path: Path, model: str) -> None:
    result, seconds = _ingest_with_model(
        tmp_path, backend="sentence-transformers", model=model, download_url=refused_url()
    )
    assert result.returncode == 3, result.stderr
    error, fix = result.stderr.splitlines()  # no retry noise from the hub client
    assert error.startswith(f"memcli: error: embedding model '{model}' is not on this machine")
    assert "cannot be reached" in error and fix.startswith("  fix: set embedding.model_dir")
    assert seconds < 30  # was over a minute of hub retries (the subprocess imports torch)
    assert not (tmp_path / "m.db").exists()


@needs_st
def test_a_model_not_here_with_downloads_off_fails_at_once(tmp_path: Path) -> None:
    result, _ = _ingest_with_model(
        tmp_path, backend="sentence-transformers", model="all-mpnet-base-v2", offline=True
    )
    assert result.returncode == 3, result.stderr
    error, fix = result.stderr.splitlines()
    assert "not on this machine and downloads are off" in error and "fix: " in fix
