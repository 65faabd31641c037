"""The MCP server introduces itself with memcli's own package version."""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from pathlib import Path

from tests.fakeserver import FakeModelServer
from tests.mcp.test_mcp import served, write_config


def test_server_info_names_the_package_version(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    async def scenario() -> None:
        async with served(write_config(tmp_path, fake_server)) as client:
            info = client.server_info
            assert (info.name, info.version) == ("memcli", version("memcli"))

    asyncio.run(scenario())
