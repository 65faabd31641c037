"""The store interface: both backends implement every method the rest of memcli calls, and
choosing one by the target's form (a path, a postgresql:// URL) needs no driver until then."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

from memcli.store import SqliteStore, Store
from memcli.store.pg import PgStore
from memcli.store.target import exists, is_url, shown
from tests.paths import REPO

ROOT = REPO


def _protocol_methods() -> dict[str, inspect.Signature]:
    names = [
        n for n, v in vars(Store).items()
        if callable(v) and (not n.startswith("_") or n in ("__enter__", "__exit__"))
    ]  # fmt: skip
    return {n: inspect.signature(getattr(Store, n)) for n in names}


def test_both_backends_have_every_method_with_the_same_parameters() -> None:
    methods = _protocol_methods()
    assert len(methods) > 100
    for backend in (SqliteStore, PgStore):
        for name, wanted in methods.items():
            got = inspect.signature(getattr(backend, name))
            assert list(got.parameters) == list(wanted.parameters), (backend.__name__, name)
        assert isinstance(inspect.getattr_static(backend, "location"), property)


def test_every_store_method_called_outside_the_store_package_is_in_the_interface() -> None:
    public = {n for n in dir(SqliteStore) if not n.startswith("_")}
    called: set[str] = set()
    for path in (ROOT / "memcli").rglob("*.py"):
        if "store" in path.relative_to(ROOT / "memcli").parts[:1]:
            continue
        text = path.read_text(encoding="utf-8")
        called |= set(re.findall(r"\bstore\.([a-z_]+)\(", text)) & public
    assert called, "found no store calls: the pattern is stale"
    missing = called - set(_protocol_methods())
    assert not missing, f"called on a store but not in store/interface.py: {sorted(missing)}"


def test_importing_memcli_and_its_cli_does_not_import_the_postgres_driver() -> None:
    code = "import sys, memcli, memcli.cli, memcli.store; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_a_url_is_told_from_a_path_and_its_password_never_shown() -> None:
    url = "postgresql://mem:s3cret@db.example:5432/team?sslmode=require"
    assert is_url(url) and is_url("postgres://h/db") and not is_url("postgresql.db")
    assert shown(url) == "postgresql://mem:***@db.example:5432/team?sslmode=require"
    assert "s3cret" not in shown("postgresql://h/db?user=mem&password=s3cret")
    assert shown("~/memory.db") == "~/memory.db"
    assert exists(url)  # a server database is never created or removed by memcli


def test_config_show_names_a_database_url_without_its_credentials(tmp_path: Path) -> None:
    from tests.cli_runner import Memcli
    from tests.reliability import write_config

    url = "postgresql://mem:s3cret@db.example/team"
    shown_db = Memcli(config=write_config(tmp_path))("--db", url, "config", "show").stdout
    assert "db.example/team" in shown_db and "s3cret" not in shown_db
