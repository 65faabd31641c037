"""Shared fixtures. Helpers for one area live in their own module and are imported here."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakeserver import FakeModelServer


@pytest.fixture
def fake_server() -> Iterator[FakeModelServer]:
    """A started loopback fake model server (Ollama and OpenAI APIs), stopped afterwards."""
    with FakeModelServer() as server:
        yield server
