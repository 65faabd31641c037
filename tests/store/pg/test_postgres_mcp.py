"""Two `memcli mcp` servers (two processes, as on two hosts) on one Postgres store, beside
a consolidation run by a third: each sees what the other remembers."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_runner import REPO, clean_env
from tests.fakeserver import FakeModelServer
from tests.mcp.test_mcp import TURNS, call, served, write_chat

pytestmark = pytest.mark.postgres

WORDS = (
    "apricot basalt cobalt dolphin ember fjord granite harbour iris juniper kelp lantern".split()
)


def _config(tmp_path: Path, server: FakeModelServer, url: str) -> Path:
    config = tmp_path / "memcli.yaml"
    config.write_text(
        f"db: '{url}'\nembedding:\n  provider: ollama\n  model: fake-embed\n"
        f"  url: {server.ollama_url}\n"
    )
    return config


def test_two_servers_share_one_store_while_a_third_process_consolidates(
    tmp_path: Path, fake_server: FakeModelServer, pg_url: str
) -> None:
    config = _config(tmp_path, fake_server, pg_url)
    chat = write_chat(tmp_path)
    consolidate = [sys.executable, "-m", "memcli", "--config", str(config), "-q"]
    consolidate += ["consolidate", "--flush", "--no-llm"]

    async def scenario() -> None:
        async with served(config) as first, served(config) as second:
            await call(first, "ingest", path=str(chat))
            worker = subprocess.Popen(consolidate, env=clean_env(), cwd=REPO)
            notes = [
                call(client, "remember", text=f"Note {i} from server {n}: {WORDS[2 * i + n]}")
                for i in range(6)
                for n, client in enumerate((first, second))
            ]
            recalls = [call(second, "recall", question=TURNS[i % 4][3], k=2) for i in range(8)]
            results = await asyncio.gather(*notes, *recalls)
            assert len({r["node_id"] for r in results[:12]}) == 12
            assert all(r["hits"] for r in results[12:])
            assert await asyncio.to_thread(worker.wait, 120) == 0
            for client in (first, second):
                nodes = (await call(client, "stats"))["nodes"]
                assert nodes["episode"] == 16 and nodes.get("segment", 0) >= 1
            # a word only that note holds: the notes' order, which the two servers race for,
            # decides which note each is embedded beside, so their vectors cannot settle it
            found = await call(first, "recall", question=f"the {WORDS[11]} note", k=1)
            assert "Note 5 from server 1" in found["context"]

    asyncio.run(scenario())
