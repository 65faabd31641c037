"""Model faults during consolidation, with the loopback fake server: what the user sees, that
nothing is half-written, and that the next run resumes to the graph a clean run makes."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memcli.store import open_store
from tests.cli_runner import REPO, Memcli, clean_env
from tests.fakemodel import consolidation_reply, read
from tests.fakeserver import FakeModelServer, refused_url
from tests.reliability import integrity, llm_config, write_config
from tests.stores import StoreCache


def configure(tmp: Path, url: str, **llm: Any) -> Path:
    """A config in a new folder of `tmp` using the fake server at `url` for both models
    (chat settings overridden by `llm`)."""
    models = llm_config(url)
    models["llm"].update(llm)
    folder = tmp / f"config{len(list(tmp.glob('config*')))}"
    folder.mkdir()
    return write_config(folder, **models)


def signature(db: Path) -> dict[str, Any]:
    """What a consolidation made, independent of timing: counts, texts and labels."""
    with open_store(db) as store:
        nodes = list(store.iter_nodes("default"))
        return {
            "nodes": store.count_nodes("default"),
            "edges": store.count_edges("default"),
            "texts": sorted((n.kind, n.text) for n in nodes if n.kind != "episode"),
        }


def assert_not_half_written(db: Path) -> None:
    """A whole file, no derived node without what it came from, no mark without its work."""
    report = integrity(db)
    assert report["check"] == ["ok"] and report["dangling_edges"] == 0
    with open_store(db) as store:
        assert store.orphans("default") == set()
        segmented = store.processed_among("segment", [n.id for n in store.iter_nodes("default")])
        in_segments = {e.src for e in store.edges_of(sorted(segmented), ["PART_OF"])}
        assert segmented <= in_segments


def ingested(stores: StoreCache, tmp: Path, server: FakeModelServer) -> Memcli:
    """memcli on tmp/m.db holding the fixture (ingested: a copy of the session's store), both
    models on `server`."""
    stores.copy("two-conversations", tmp / "m.db")
    return Memcli(config=configure(tmp, server.url), db=tmp / "m.db")


@pytest.fixture(scope="module")
def clean_run(stores: StoreCache, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The graph an undisturbed consolidation of the fixture makes."""
    tmp = tmp_path_factory.mktemp("clean")
    with FakeModelServer() as server:
        server.responder = consolidation_reply
        cli = ingested(stores, tmp, server)
        result = cli("consolidate", "--flush")
        assert result.exit_code == 0, result.stderr
    clean = signature(cli.db)
    # One fact a turn, except for the one turn the memory gate finds nothing memorable in.
    assert clean["nodes"]["fact"] == 18 and clean["nodes"]["reflection"] >= 1
    return clean


def _not_json(body: dict[str, Any]) -> str:
    return "Sure! Here are the facts you asked for."


def _off_schema(body: dict[str, Any]) -> str:
    return '{"facts": "many", "summary": 3, "boundaries": "x", "links": 1, "reflections": null}'


def _fenced(body: dict[str, Any]) -> str:
    return f"Here you go:\n```json\n{consolidation_reply(body)}\n```\nAnything else?"


def _foreign_ids(body: dict[str, Any]) -> str:
    reply = json.loads(consolidation_reply(body))
    for fact in reply.get("facts", []):
        fact["sources"] = ["ep99999"]  # an id the prompt never showed
    return json.dumps(reply)


# (fault, how to inject it, exit code, what stderr says)
FAULTS: list[tuple[str, Callable[[FakeModelServer], None], int, str]] = [
    ("HTTP 500 once", lambda s: s.fail_next(1, 500), 0, r"model calls, .* 0 failures"),
    (
        "HTTP 429 with Retry-After",
        lambda s: s.fail_next(1, 429, "slow down", 0.1),
        0,
        r"model calls, .* 0 failures",
    ),
    (
        "HTTP 503 on every call",
        lambda s: s.fail_next(10_000, 503, "model overloaded"),
        5,
        r"answered HTTP 503: model overloaded \(after 2 attempts\)",
    ),
    (
        "connection dropped",
        lambda s: s.drop_next(10_000),
        5,
        r"server disconnected without sending a response \(after 2 attempts\)",
    ),
    (
        "malformed response body",
        lambda s: s.malformed_next(10_000),
        5,
        r"sent an unreadable reply: the body is not JSON \(after 2 attempts\)",
    ),
    (
        "timeout",
        lambda s: setattr(s, "delay", 1.0),
        5,
        r"no answer within 0.3 s \(after 2 attempts\)",
    ),
    (
        "model not installed",
        lambda s: setattr(s, "models", {"fake-embed"}),
        5,
        r"model \"fake-chat\" not found.*\n  fix: `ollama pull fake-chat`",
    ),
    (
        "reply in code fences with chatter",
        lambda s: setattr(s, "responder", _fenced),
        0,
        r"model calls, .* 0 failures",
    ),
    (
        "reply is not JSON",
        lambda s: setattr(s, "responder", _not_json),
        0,  # the rest of the run was done: a warning, the work waits
        r"model calls, .* [1-9]\d* failures(.|\n)*memcli: warning: [1-9]\d* model calls? failed",
    ),
    (
        "reply off the schema",
        lambda s: setattr(s, "responder", _off_schema),
        0,  # the rest of the run was done: a warning, the work waits
        r"model calls, .* [1-9]\d* failures(.|\n)*memcli: warning: [1-9]\d* model calls? failed",
    ),
]


def _heal(server: FakeModelServer) -> None:
    server.delay, server.models, server.responder = 0.0, None, consolidation_reply
    while server._faults:  # the queued faults of a fault that never ran out
        server._faults.popleft()


@pytest.mark.parametrize(
    ("inject", "code", "says"), [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS]
)
def test_model_fault_leaves_nothing_half_written_and_the_next_run_resumes(
    stores: StoreCache,
    tmp_path: Path,
    fake_server: FakeModelServer,
    clean_run: dict[str, Any],
    inject: Callable[[FakeModelServer], None],
    code: int,
    says: str,
) -> None:
    fake_server.responder = consolidation_reply
    cli = ingested(stores, tmp_path, fake_server)
    faulty = configure(tmp_path, fake_server.url, timeout=0.3)
    inject(fake_server)
    result = Memcli(config=faulty, db=cli.db)("consolidate", "--flush")
    assert result.exit_code == code, result.stderr
    assert re.search(says, result.stderr), result.stderr
    if code == 8:  # finished, but failed calls left work pending: the table, then the error
        assert "consolidation" in result.stdout
        assert result.stderr.splitlines()[-1].startswith("memcli: error: ")
    elif code:
        assert result.stdout == "" and result.stderr.startswith("memcli: error: ")
    else:
        assert "consolidation" in result.stdout  # the per-stage table
    assert_not_half_written(cli.db)
    _heal(fake_server)
    resumed = cli("--json", "consolidate", "--flush")
    assert resumed.exit_code == 0, resumed.stderr
    assert json.loads(resumed.stdout)["totals"]["failures"] == 0
    assert_not_half_written(cli.db)
    assert signature(cli.db) == clean_run


def test_unreachable_server_then_back(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer, clean_run: dict[str, Any]
) -> None:
    fake_server.responder = consolidation_reply
    cli = ingested(stores, tmp_path, fake_server)
    down = configure(tmp_path, refused_url())
    result = Memcli(config=down, db=cli.db)("consolidate", "--flush")
    assert result.exit_code == 5 and result.stdout == ""
    assert result.stderr.startswith("memcli: error: cannot reach Ollama at http://127.0.0.1:")
    assert "`ollama serve`" in result.stderr
    assert signature(cli.db)["nodes"] == {"episode": 19}
    resumed = cli("consolidate", "--flush")
    assert resumed.exit_code == 0, resumed.stderr
    assert signature(cli.db) == clean_run


def test_ids_the_prompt_never_showed_are_dropped(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = _foreign_ids
    cli = ingested(stores, tmp_path, fake_server)
    result = cli("--json", "consolidate", "--flush")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["totals"]["dropped"] == 18  # every turn the gate kept
    assert_not_half_written(cli.db)
    assert "fact" not in signature(cli.db)["nodes"]  # a fact must rest on turns it was shown


def _dying_responder(
    server: FakeModelServer, after: int, task: str | None = None
) -> Callable[[dict[str, Any]], str]:
    calls = 0

    def reply(body: dict[str, Any]) -> str:
        nonlocal calls
        calls += task is None or read(body).task == task
        if calls == after:  # the server goes away while this reply is on its way
            threading.Thread(target=server.stop, daemon=True).start()
        return consolidation_reply(body)

    return reply


def test_server_dies_mid_run_then_the_run_resumes(
    stores: StoreCache, tmp_path: Path, clean_run: dict[str, Any]
) -> None:
    with FakeModelServer() as first:
        cli = ingested(stores, tmp_path, first)
        first.responder = _dying_responder(first, after=2, task="extract")  # inside facts
        result = cli("consolidate", "--flush")
    assert result.exit_code == 5, result.stderr
    assert result.stderr.startswith("memcli: error: cannot reach Ollama")
    assert_not_half_written(cli.db)
    partial = signature(cli.db)
    assert partial["nodes"].get("segment") and partial != clean_run  # some work committed
    shown = json.loads(cli("--json", "inspect").stdout)["consolidation"]
    assert any(r["status"] == "failed" for r in shown["last_runs"].values())
    with FakeModelServer() as second:  # back, at another address
        second.responder = consolidation_reply
        back = Memcli(config=configure(tmp_path, second.url), db=cli.db)
        resumed = back("consolidate", "--flush")
    assert resumed.exit_code == 0, resumed.stderr
    assert_not_half_written(cli.db)
    assert signature(cli.db) == clean_run


def _chat_calls(server: FakeModelServer) -> int:
    return len(server.requests_to("/api/chat"))


def test_killed_consolidation_resumes_to_the_same_graph(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer, clean_run: dict[str, Any]
) -> None:
    fake_server.responder = consolidation_reply
    cli = ingested(stores, tmp_path, fake_server)
    fake_server.delay = 0.05  # slow enough to be caught in the middle
    killed_at = []
    for calls in (3, 9, 14):  # boundaries, summaries/links, facts
        before = _chat_calls(fake_server)
        proc = subprocess.Popen(
            [sys.executable, "-m", "memcli", *cli.argv("consolidate", "--flush")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(), cwd=REPO,
        )  # fmt: skip
        while proc.poll() is None and _chat_calls(fake_server) - before < calls:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        killed_at.append(proc.wait())
        assert_not_half_written(cli.db)
    assert -signal.SIGKILL in killed_at  # at least one kill landed while it was running
    fake_server.delay = 0.0
    resumed = cli("--json", "consolidate", "--flush")
    assert resumed.exit_code == 0, resumed.stderr
    assert_not_half_written(cli.db)
    assert signature(cli.db) == clean_run
    health = json.loads(cli("--json", "inspect").stdout)["consolidation"]
    assert all(r["status"] == "done" for r in health["last_runs"].values())
    assert health["pending"]["facts"] == 0 and health["totals"]["prompt_tokens"] > 0


def test_inspect_shows_consolidation_health_after_a_failure(
    stores: StoreCache, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = consolidation_reply
    cli = ingested(stores, tmp_path, fake_server)
    fake_server.responder = _not_json
    failed = cli("consolidate", "--flush")  # the failed facts are left pending, the rest done
    assert failed.exit_code == 0 and "memcli: warning: " in failed.stderr
    health = json.loads(cli("--json", "inspect").stdout)["consolidation"]
    assert health["last_runs"]["facts"]["failures"] == 4
    assert health["totals"]["failures"] >= 4 and health["totals"]["prompt_tokens"] > 0
    assert health["pending"]["facts"] == 18  # the gate (no model) let one dull turn go
    shown = cli("inspect")
    assert shown.exit_code == 0 and "facts" in shown.stdout and "pending" in shown.stdout
