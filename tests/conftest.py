"""Shared fixtures. Helpers for one area live in their own module and are imported here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakeserver import FakeModelServer


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Model downloads and built ONNX graphs go to a per-run directory, not the user's cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    yield
    patch.undo()


@pytest.fixture
def fake_server() -> Iterator[FakeModelServer]:
    """A started loopback fake model server (Ollama and OpenAI APIs), stopped afterwards."""
    with FakeModelServer() as server:
        yield server
