"""Who may use the memory over `memcli mcp --http`: a real server process on loopback,
spoken to over real HTTP. Without the bearer token a request is refused; with it the tools
work; the ingest tool reads only from the directories the owner allowed; forgetting a
whole space and other spaces need the server's consent."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.cli_runner import REPO, clean_env
from tests.fakeserver import FakeModelServer
from tests.mcp.test_mcp import call, error_of, free_port, write_chat, write_config

TOKEN = "test-token-0123456789abcdef"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


@contextmanager
def http_server(
    config: Path, *flags: str, token: str | None = TOKEN, stderr: Any = None
) -> Iterator[str]:
    """A `memcli mcp --http` process (with MEMCLI_MCP_TOKEN = `token` unless None); its URL."""
    port = free_port()
    env = clean_env(**({"MEMCLI_MCP_TOKEN": token} if token else {}))
    argv = [sys.executable, "-m", "memcli", "--config", str(config), "mcp", "--http"]
    server = subprocess.Popen(
        [*argv, "--port", str(port), *flags], env=env, cwd=REPO, stderr=stderr, text=True
    )
    try:
        for _ in range(300):  # until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "the server ended early"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(30)


def client(url: str, token: str | None = TOKEN) -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60)


def post(url: str, headers: dict[str, str]) -> tuple[int, dict[str, Any] | str]:
    """One raw JSON-RPC initialize over HTTP: (status, parsed JSON body or text)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(INITIALIZE).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_requests_without_the_token_are_refused(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    with http_server(write_config(tmp_path, fake_server)) as url:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"},
                        {"Authorization": f"Basic {TOKEN}"}):  # fmt: skip
            status, body = post(url, headers)
            assert status == 401, headers
            assert isinstance(body, dict) and "bearer token" in body["error"]
        status, _ = post(url, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200

        async def scenario() -> None:
            async with client(url) as session:
                added = await call(session, "remember", text="The spare key is under the blue pot")
                found = await call(session, "recall", question="Where is the spare key?")
                assert found["hits"][0]["node_id"] == added["node_id"]
                assert session.server_info.version == version("memcli")

        asyncio.run(scenario())
    assert fake_server.requests  # the tools ran


def test_a_new_token_is_made_and_printed_at_each_start(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    log = tmp_path / "stderr.txt"
    with log.open("w") as err, http_server(write_config(tmp_path, fake_server), token=None,
                                           stderr=err) as url:  # fmt: skip
        for _ in range(100):
            if "bearer token: " in log.read_text():
                break
            time.sleep(0.1)
        token = log.read_text().split("bearer token: ")[1].split()[0]
        assert len(token) >= 32
        assert post(url, {})[0] == 401
        assert post(url, {"Authorization": f"Bearer {token}"})[0] == 200


def test_a_short_fixed_token_is_a_config_error(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    argv = [sys.executable, "-m", "memcli", "--config", str(write_config(tmp_path, fake_server))]
    done = subprocess.run([*argv, "mcp", "--http", "--port", str(free_port())],
                          env=clean_env(MEMCLI_MCP_TOKEN="short"), cwd=REPO,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 3 and "mcp.token is 5 characters" in done.stderr


def test_ingest_reads_only_the_allowed_directories(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    chat = write_chat(inbox)
    secret = tmp_path / "id_ed25519"
    secret.write_text("Ann: -----BEGIN OPENSSH PRIVATE KEY----- not really\n")
    (inbox / "escape.txt").symlink_to(secret)
    config = write_config(tmp_path, fake_server)

    async def by_default(url: str) -> None:
        async with client(url) as session:
            refused = await error_of(session, "ingest", path=str(chat))
            assert "outside the directories this server allows (none" in refused
            assert "mcp.ingest_dirs" in refused

    with http_server(config) as url:
        asyncio.run(by_default(url))
    with config.open("a") as extra:
        extra.write(f"mcp:\n  ingest_dirs: [{inbox}]\n")

    async def allowed(url: str) -> None:
        async with client(url) as session:
            assert (await call(session, "ingest", path=str(chat)))["new"] == 4
            for path in (str(secret), str(inbox / "escape.txt"), f"{inbox}/../id_ed25519"):
                refused = await error_of(session, "ingest", path=path)
                assert f"outside the directories this server allows ({inbox})" in refused

    with http_server(config) as url:
        asyncio.run(allowed(url))


def test_forgetting_a_whole_space_needs_the_server_flag(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    config = write_config(tmp_path, fake_server)
    config.write_text(config.read_text() + f"mcp:\n  ingest_dirs: [{tmp_path}]\n")
    chat = write_chat(tmp_path)

    async def refused(url: str) -> None:
        async with client(url) as session:
            await call(session, "ingest", path=str(chat))
            for selection in ({"sessions": ["*"]}, {"sources": [str(chat)]}):
                message = await error_of(session, "forget", confirm=True, **selection)
                assert "would forget all 4 turns of the space" in message
                assert "--allow-forget-all" in message
            planned = await call(session, "forget", sessions=["*"])  # a dry run still reports
            assert planned["dry_run"] and planned["removed"]["episode"] == 4
            one = await call(session, "forget", sessions=["pets"], confirm=True)
            assert one["removed"]["episode"] == 2

    async def allowed(url: str) -> None:
        async with client(url) as session:
            done = await call(session, "forget", sessions=["*"], confirm=True)
            assert done["removed"]["episode"] == 2

    with http_server(config) as url:
        asyncio.run(refused(url))
    with http_server(config, "--allow-forget-all") as url:
        asyncio.run(allowed(url))


def test_clients_can_be_held_to_the_servers_spaces(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    config = write_config(tmp_path, fake_server)
    config.write_text(config.read_text() + "mcp:\n  spaces: [work]\n")

    async def scenario(url: str) -> None:
        async with client(url) as session:
            await call(session, "remember", text="Standup moved to 9:30", space="work")
            await call(session, "remember", text="Buy oat milk")  # the server's own space
            message = await error_of(session, "remember", text="x", space="private")
            assert "space 'private' is not open to clients of this server" in message
            assert "default, work" in message
            assert "not open" in await error_of(session, "recall", question="x", space="other")

    with http_server(config) as url:
        asyncio.run(scenario(url))
