"""A config file holding `mcp.token` that other users may read: every command warns, naming
the file and `chmod 600` as the fix, and `mcp --http` will not serve with that token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_runner import REPO, Memcli, clean_env
from tests.mcp.test_mcp import free_port
from tests.reliability import write_config

TOKEN = "file-token-0123456789abcdef"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


def _config(tmp_path: Path, mode: int, token: str | None = TOKEN) -> Path:
    sections = {"mcp": {"token": token}} if token else {}
    path = write_config(tmp_path, **sections)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_token_in_a_file_others_may_read_is_a_warning_naming_the_fix(
    tmp_path: Path, mode: int
) -> None:
    cfg = _config(tmp_path, mode)
    result = Memcli(config=cfg)("config", "show")
    assert result.exit_code == 0, result.stderr
    assert f"{cfg} holds mcp.token" in result.stderr and f"chmod 600 {cfg}" in result.stderr
    assert f"mode 0{mode:o}" in result.stderr
    assert TOKEN not in result.stdout + result.stderr
    [*records] = Memcli(config=cfg)("--json", "config", "show").stderr.splitlines()
    assert any(f"chmod 600 {cfg}" in json.loads(r).get("warning", "") for r in records)


@pytest.mark.parametrize(("mode", "token"), [(0o600, TOKEN), (0o400, TOKEN), (0o644, None)])
def test_a_private_file_or_one_without_a_token_says_nothing(
    tmp_path: Path, mode: int, token: str | None
) -> None:
    cfg = _config(tmp_path, mode, token)
    result = Memcli(config=cfg)("config", "show")
    assert result.exit_code == 0 and "chmod" not in result.stderr, result.stderr


def _mcp_http(cfg: Path, **env: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "memcli", "--config", str(cfg), "mcp", "--http"]
    return subprocess.Popen(
        [*argv, "--port", str(free_port())], env=clean_env(**env), cwd=REPO,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_mcp_http_refuses_to_serve_with_a_token_others_may_read(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 0o644)
    out, err = _mcp_http(cfg).communicate(timeout=120)
    assert "will not serve over HTTP" in err and f"chmod 600 {cfg}" in err, err
    assert TOKEN not in out + err
    cfg.chmod(0o600)
    server = _mcp_http(cfg)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()  # the first line: where the token came from
        assert "bearer token: the one set in MEMCLI_MCP_TOKEN or mcp.token" in line, line
        assert server.poll() is None
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_a_token_from_the_environment_is_served_though_the_file_still_warns(
    tmp_path: Path,
) -> None:
    cfg = _config(tmp_path, 0o644)
    server = _mcp_http(cfg, MEMCLI_MCP_TOKEN="env-token-0123456789abcdef")
    try:
        assert server.stderr is not None
        assert f"chmod 600 {cfg}" in server.stderr.readline()
        assert "bearer token: the one set" in server.stderr.readline()
    finally:
        server.terminate()
        server.communicate(timeout=30)
