"""`memcli mcp` end to end: a real server process over stdio, driven by the SDK's own client."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.cli_runner import REPO, clean_env
from tests.fakeserver import FakeModelServer

TURNS = [
    ("trip", "2024-03-02T09:00:00", "Ann", "We booked the Alfama hotel in Lisbon for May."),
    ("trip", "2024-03-02T09:01:00", "Ben", "Great, the conference is about graph databases."),
    ("pets", "2024-03-09T18:00:00", "Ben", "Did you adopt the grey kitten from the shelter?"),
    ("pets", "2024-03-09T18:01:00", "Ann", "Yes, her name is Miso and she sleeps all day."),
]
TOOLS = {"remember", "recall", "answer", "ingest", "forget", "stats", "inspect"}


def write_config(tmp_path: Path, server: FakeModelServer, llm: bool = False) -> Path:
    """A store in tmp_path, embeddings (and optionally chat) from the fake model server."""
    config = tmp_path / "memcli.yaml"
    text = (
        f"db: {tmp_path / 'memory.db'}\nembedding:\n  provider: ollama\n  model: fake-embed\n"
        f"  url: {server.ollama_url}\n"
    )
    if llm:
        text += f"llm:\n  provider: ollama\n  model: fake-chat\n  url: {server.ollama_url}\n"
    config.write_text(text)
    return config


def write_chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    rows = [{"session": s, "timestamp": t, "speaker": w, "text": x} for s, t, w, x in TURNS]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@asynccontextmanager
async def served(config: Path) -> AsyncIterator[Client]:
    """A `memcli --config CONFIG mcp` process and a connected client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memcli", "--config", str(config), "mcp"],
        env=clean_env(),
        cwd=str(REPO),
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's JSON result; fails the test on a tool error."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def error_of(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content
    return result.content[0].text


def test_tools_remember_recall_inspect_and_resources(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    config = write_config(tmp_path, fake_server)
    chat = write_chat(tmp_path)

    async def scenario() -> None:
        async with served(config) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            ingested = await call(client, "ingest", path=str(chat))
            assert ingested["new"] == 4
            assert (await call(client, "ingest", path=str(chat)))["new"] == 0
            added = await call(client, "remember", text="The red kite nests in the old oak")
            assert added["new"] is True and added["node_id"] == "ep5"
            found = await call(client, "recall", question="Where does the red kite nest?", k=3)
            assert found["hits"][0]["node_id"] == "ep5" and "[ep5]" in found["context"]
            semantic = await call(client, "recall", question="grey kitten", strategy="semantic")
            assert semantic["hits"][0]["node_id"] == "ep3"
            view = await call(client, "inspect", node_id="ep1")
            assert view["text"] == TURNS[0][3] and view["provenance"]["files"] == [str(chat)]
            assert (await call(client, "stats"))["nodes"] == {"episode": 5}
            node = await client.read_resource("memcli://node/ep1")
            assert json.loads(node.contents[0].text)["node_id"] == "ep1"
            origin = await client.read_resource("memcli://node/ep2/provenance")
            assert json.loads(origin.contents[0].text)["files"] == [str(chat)]

    asyncio.run(scenario())


def test_forget_reports_until_confirmed(tmp_path: Path, fake_server: FakeModelServer) -> None:
    config = write_config(tmp_path, fake_server)
    chat = write_chat(tmp_path)

    async def scenario() -> None:
        async with served(config) as client:
            await call(client, "ingest", path=str(chat))
            preview = await call(client, "forget", sessions=["pets"])
            assert preview["dry_run"] is True and preview["removed"] == {"episode": 2}
            assert (await call(client, "stats"))["nodes"] == {"episode": 4}
            done = await call(client, "forget", sessions=["pets"], confirm=True)
            assert done["dry_run"] is False and done["removed"] == {"episode": 2}
            assert (await call(client, "stats"))["nodes"] == {"episode": 2}
            assert "ep3" in await error_of(client, "inspect", node_id="ep3")

    asyncio.run(scenario())


def test_errors_are_tool_errors_with_the_fix(tmp_path: Path, fake_server: FakeModelServer) -> None:
    config = write_config(tmp_path, fake_server)

    async def scenario() -> None:
        async with served(config) as client:
            await call(client, "remember", text="A note")
            no_llm = await error_of(client, "answer", question="What note?")
            assert "recall" in no_llm and "fix" in no_llm
            assert "fix" in await error_of(client, "recall", question="x", strategy="bogus")
            assert "empty" in await error_of(client, "remember", text="  ")
            assert "no such file" in await error_of(
                client, "ingest", path=str(tmp_path / "missing.jsonl")
            )
            assert "remember" in await error_of(client, "ingest", path="-")  # stdin is MCP's
            assert (await call(client, "recall", question="A note"))["hits"]  # still serving
            with pytest.raises(Exception, match="ep99"):
                await client.read_resource("memcli://node/ep99")

    asyncio.run(scenario())


def test_spaces_resources_take_them_and_a_mistyped_one_is_an_error(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    config = write_config(tmp_path, fake_server)

    async def scenario() -> None:
        async with served(config) as client:
            await call(client, "remember", text="A note at home")
            await call(client, "remember", text="A note at work", space="work")
            work = await client.read_resource("memcli://stats?space=work")
            assert json.loads(work.contents[0].text)["space"] == "work"
            home = await client.read_resource("memcli://stats")
            assert json.loads(home.contents[0].text)["nodes"] == {"episode": 1}
            for tool, args in [("recall", {"question": "note"}), ("stats", {})]:
                assert "no space 'wrok'" in await error_of(client, tool, space="wrok", **args)
            with pytest.raises(Exception, match="no space 'wrok'"):
                await client.read_resource("memcli://stats?space=wrok")

    asyncio.run(scenario())


def test_answer_uses_the_configured_llm(tmp_path: Path, fake_server: FakeModelServer) -> None:
    config = write_config(tmp_path, fake_server, llm=True)
    chat = write_chat(tmp_path)
    fake_server.responder = lambda body: json.dumps(
        {"answer": "The Alfama hotel.", "citations": ["ep1"]}
    )

    async def scenario() -> None:
        async with served(config) as client:
            await call(client, "ingest", path=str(chat))
            answered = await call(client, "answer", question="Which hotel did Ann book?")
            assert answered["answer"] == "The Alfama hotel." and answered["citations"] == ["ep1"]

    try:
        asyncio.run(scenario())
    finally:
        fake_server.responder = None


def test_concurrent_calls_beside_a_consolidation(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    """Many calls in flight at once while another process consolidates the same file: every
    call succeeds, and the server then sees what the consolidation wrote."""
    config = write_config(tmp_path, fake_server)
    chat = write_chat(tmp_path)
    consolidate = [sys.executable, "-m", "memcli", "--config", str(config), "-q"]
    consolidate += ["consolidate", "--flush", "--no-llm"]

    async def scenario() -> None:
        async with served(config) as client:
            await call(client, "ingest", path=str(chat))
            worker = subprocess.Popen(consolidate, env=clean_env(), cwd=REPO)
            recalls = [call(client, "recall", question=TURNS[i % 4][3], k=2) for i in range(24)]
            notes = [call(client, "remember", text=f"Note number {i}") for i in range(8)]
            results = await asyncio.gather(*recalls, *notes)
            assert all(r["hits"] for r in results[:24])
            assert len({r["node_id"] for r in results[24:]}) == 8
            assert await asyncio.to_thread(worker.wait, 120) == 0
            nodes = (await call(client, "stats"))["nodes"]
            assert nodes["episode"] == 12 and nodes.get("segment", 0) >= 1

    asyncio.run(scenario())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_streamable_http_on_localhost(tmp_path: Path, fake_server: FakeModelServer) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    config = write_config(tmp_path, fake_server)
    port = free_port()
    argv = [sys.executable, "-m", "memcli", "--config", str(config), "mcp", "--http"]
    token = "a-fixed-token-for-this-test"
    env = clean_env(MEMCLI_MCP_TOKEN=token)
    server = subprocess.Popen([*argv, "--port", str(port)], env=env, cwd=REPO)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)

    async def scenario() -> None:
        for _ in range(100):  # until the server listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                await asyncio.sleep(0.2)
        async with Client(transport, read_timeout_seconds=60) as client:
            added = await call(client, "remember", text="The spare key is under the blue pot")
            found = await call(client, "recall", question="Where is the spare key?")
            assert found["hits"][0]["node_id"] == added["node_id"]

    try:
        asyncio.run(scenario())
    finally:
        server.terminate()
        server.wait(30)


def test_recall_follows_a_prune_by_another_process(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    """The server keeps graph reads between calls; a turn another process forgets is gone
    from the next recall, though the edges and rows read before led to it."""
    config = write_config(tmp_path, fake_server)
    chat = write_chat(tmp_path)
    prune = [sys.executable, "-m", "memcli", "--config", str(config), "-q"]
    prune += ["prune", "--node", "ep4", "--yes"]

    async def scenario() -> None:
        async with served(config) as client:
            await call(client, "ingest", path=str(chat))
            for _ in range(2):  # the second call reads from the server's cache
                found = await call(client, "recall", question=TURNS[2][3], k=4)
                assert "ep4" in {h["node_id"] for h in found["hits"]}
            done = await asyncio.to_thread(subprocess.run, prune, env=clean_env(), cwd=REPO)
            assert done.returncode == 0
            found = await call(client, "recall", question=TURNS[2][3], k=4)
            assert "ep4" not in {h["node_id"] for h in found["hits"]}
            assert "[ep4]" not in found["context"] and found["hits"]

    asyncio.run(scenario())


def test_a_port_in_use_is_a_memcli_error_before_anything_loads(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    from tests.cli_runner import Memcli

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = Memcli(config=write_config(tmp_path, fake_server))("mcp", "--http", "--port", port)
    assert result.exit_code == 3 and result.stdout == ""
    assert result.stderr.startswith(f"memcli: error: cannot serve on 127.0.0.1:{port}: ")
    assert "\n  fix: pass another --port" in result.stderr and "serving" not in result.stderr
    assert fake_server.requests == []  # the embedding model was never asked for


# The MCP server introduces itself with memcli's own package version.


def test_server_info_names_the_package_version(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    async def scenario() -> None:
        async with served(write_config(tmp_path, fake_server)) as client:
            info = client.server_info
            assert (info.name, info.version) == ("memcli", version("memcli"))

    asyncio.run(scenario())
