"""Who may read `memcli ui`: the token (or its cookie), the loopback Host, no foreign
Origin, read-only methods; and a store the page cannot change."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from memcli.errors import ReadOnlyStore
from tests.ui_helpers import PORT, TOKEN, build, config, page_client, signed_in

PAGES = ("/", "/search?q=Porto", "/timeline", "/entities", "/runs", "/static/ui.css")
NAVIGATE = {"sec-fetch-mode": "navigate"}  # what a browser sends when it opens an address


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return build(tmp_path_factory.mktemp("ui-access"))


@pytest.mark.parametrize("path", PAGES)
def test_without_the_token_every_address_is_refused(built: dict[str, Any], path: str) -> None:
    with page_client(built["db"]) as client:
        answer = client.get(path)
        assert answer.status_code == 401
        assert "Porto" not in answer.text and "?token=" in answer.text
        wrong = client.get(path + ("&" if "?" in path else "?") + "token=not-the-token")
        assert wrong.status_code == 401 and "set-cookie" not in wrong.headers


def test_the_first_visit_sets_a_strict_httponly_cookie_and_drops_the_token(
    built: dict[str, Any],
) -> None:
    with page_client(built["db"]) as client:
        first = client.get(
            f"/search?q=Porto&token={TOKEN}", headers=NAVIGATE, follow_redirects=False
        )
        assert first.status_code == 303
        assert first.headers["location"] == f"http://127.0.0.1:{PORT}/search?q=Porto"
        cookie = first.headers["set-cookie"]
        assert f"memcli_ui_{PORT}={TOKEN}" in cookie
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        page = client.get("/search?q=Porto")  # the cookie alone now
        assert page.status_code == 200 and "I moved to Porto" in page.text


@pytest.mark.parametrize(
    "path", ["//evil.example/", "//evil.example/search?q=x", "/\\evil.example/", "///evil.example"]
)
def test_the_redirect_after_the_token_never_leaves_this_server(
    built: dict[str, Any], path: str
) -> None:
    with page_client(built["db"]) as client:
        sep = "&" if "?" in path else "?"
        first = client.get(f"{path}{sep}token={TOKEN}", headers=NAVIGATE, follow_redirects=False)
        assert first.status_code == 303
        assert first.headers["location"].startswith(f"http://127.0.0.1:{PORT}/")


def test_a_token_on_the_address_or_as_bearer_opens_each_page_for_a_script(
    built: dict[str, Any],
) -> None:
    with page_client(built["db"]) as client:
        first = client.get(f"/search?q=Porto&token={TOKEN}", follow_redirects=False)
        assert first.status_code == 200 and "I moved to Porto" in first.text
        assert f"memcli_ui_{PORT}={TOKEN}" in first.headers["set-cookie"]
    with page_client(built["db"]) as client:
        bearer = {"authorization": f"Bearer {TOKEN}"}
        for path in PAGES:
            assert client.get(path, headers=bearer).status_code == 200, path
        assert "set-cookie" not in client.get("/", headers=bearer).headers
        assert client.get("/", headers={"authorization": "Bearer nope"}).status_code == 401
        assert client.get("/").status_code == 401  # nothing kept from the bearer requests


def test_another_servers_cookie_is_not_this_ones(built: dict[str, Any]) -> None:
    with page_client(built["db"]) as client:
        client.cookies.set(f"memcli_ui_{PORT + 1}", TOKEN)
        assert client.get("/").status_code == 401


@pytest.mark.parametrize(
    "host", ["evil.example", f"evil.example:{PORT}", f"127.0.0.1:{PORT + 1}", "127.0.0.1"]
)
def test_a_foreign_host_is_refused_even_with_the_token(built: dict[str, Any], host: str) -> None:
    with page_client(built["db"]) as client:
        answer = client.get(f"/?token={TOKEN}", headers={"host": host})
        assert answer.status_code == 421
        assert "set-cookie" not in answer.headers and "Porto" not in answer.text


@pytest.mark.parametrize("host", [f"localhost:{PORT}", f"127.0.0.1:{PORT}", f"[::1]:{PORT}"])
def test_the_loopback_names_are_served(built: dict[str, Any], host: str) -> None:
    with page_client(built["db"]) as client:
        assert client.get(f"/?token={TOKEN}", headers={"host": host}).status_code == 200


def test_a_foreign_origin_is_refused(built: dict[str, Any]) -> None:
    with page_client(built["db"]) as client:
        signed_in(client)
        evil = client.get("/search?q=Porto", headers={"origin": "http://evil.example"})
        assert evil.status_code == 403 and "Porto" not in evil.text
        own = client.get("/search?q=Porto", headers={"origin": f"http://127.0.0.1:{PORT}"})
        assert own.status_code == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_only_reading_methods_are_served(built: dict[str, Any], method: str) -> None:
    with page_client(built["db"]) as client:
        signed_in(client)
        answer = client.request(method, f"/node/{built['turns'][0]}")
        assert answer.status_code == 405 and answer.headers["allow"] == "GET, HEAD"


def test_pages_carry_the_security_headers(built: dict[str, Any]) -> None:
    with page_client(built["db"]) as client:
        page = signed_in(client).get("/")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "no-referrer"


def _digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest()


def test_the_page_opens_the_store_read_only_and_changes_nothing(tmp_path: Path) -> None:
    built = build(tmp_path)
    db = built["db"]
    from memcli.memory import Memory

    with Memory(config(db)):  # checkpoint the WAL, so the file alone holds the store
        pass
    before = _digest(db)
    with page_client(db) as client:
        signed_in(client)
        for path in [*PAGES, f"/node/{built['turns'][0]}", f"/entity/{built['entity']}"]:
            assert client.get(path).status_code == 200, path
        for method in ("POST", "DELETE"):
            assert client.request(method, f"/node/{built['turns'][0]}").status_code == 405
    assert _digest(db) == before


def test_a_write_through_the_pages_memory_is_impossible(tmp_path: Path) -> None:
    from memcli.store.sqlite.db import sqlite_module
    from memcli.ui.server import open_memory

    built = build(tmp_path)
    mem = open_memory(config(built["db"]))
    try:
        with pytest.raises(ReadOnlyStore):
            mem.add("a new memory")
        # Below the store's own checks SQLite refuses too: the connection is read-only.
        with pytest.raises(sqlite_module().OperationalError, match="readonly"):
            mem.store.conn.execute("DELETE FROM nodes")
    finally:
        mem.close()
    with page_client(built["db"]) as client:
        assert "I moved to Porto" in signed_in(client).get(f"/node/{built['turns'][0]}").text


def test_a_missing_store_is_not_created(tmp_path: Path) -> None:
    from memcli.errors import NotFound
    from memcli.ui.server import open_memory

    with pytest.raises(NotFound, match="no memory store"):
        open_memory(config(tmp_path / "none.db"))
    assert not (tmp_path / "none.db").exists()
