"""`memcli consolidate` and the consolidation part of `inspect`, through the CLI.

Includes the process-level guarantees: a second run exits 0 at once while another holds
the lock, and a run killed partway resumes to the same graph as an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memcli.store import open_store
from tests.cli_runner import Memcli, ctrl_c_ready
from tests.consolidate_helpers import config_file, long_chat, opened
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer, refused_url
from tests.paths import REPO

ROOT = REPO


def _ingest(cfg: Path, *files: Path) -> None:
    Memcli(config=cfg).ok("ingest", *files)


def _counts(cfg: Path) -> tuple[dict[str, int], dict[str, int]]:
    result = Memcli(config=cfg)("--json", "inspect")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    return data["nodes"], data["edges"]


def test_consolidate_no_llm_prints_stages_and_notes(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    cfg = config_file(chat_store, fake_server)
    result = Memcli(config=cfg)("consolidate", "--no-llm", "--flush")
    assert result.exit_code == 0, result.stderr
    assert "segment" in result.stdout and "concepts" in result.stdout
    assert "facts: needs an LLM" in result.stdout and "reflect: needs an LLM" in result.stdout
    assert "0 model calls" in result.stderr and "completion tokens" in result.stderr
    nodes, edges = _counts(cfg)
    assert nodes["segment"] > 0 and nodes["concept"] > 0 and edges["PART_OF"] == nodes["episode"]


def test_consolidate_json_is_one_object(chat_store: Path, fake_server: FakeModelServer) -> None:
    fake_server.responder = ScriptedLLM()
    cfg = config_file(chat_store, fake_server)
    result = Memcli(config=cfg)("--json", "consolidate", "--flush")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    data = json.loads(lines[0])
    assert data["locked"] is False and set(data["stages"]) == {
        "segment", "summarize", "link", "gate", "facts", "concepts", "entities", "supersede",
        "reflect", "words",
    }  # fmt: skip
    assert data["totals"]["llm_calls"] > 0 and data["totals"]["prompt_tokens"] > 0
    for key in ("status", "reason", "items", "nodes", "edges", "llm_calls", "cache_hits"):
        assert key in data["stages"]["facts"]
    again = json.loads(Memcli(config=cfg)("--json", "consolidate", "--flush").stdout)
    assert again["totals"]["llm_calls"] == 0 and again["totals"]["nodes"] == 0


def test_dry_run_and_usage_errors(chat_store: Path, fake_server: FakeModelServer) -> None:
    cfg = config_file(chat_store, fake_server, llm=False)
    result = Memcli(config=cfg)("consolidate", "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert "dry run" in result.stdout and "open session buffers" in result.stdout
    assert _counts(cfg)[0] == {"episode": 28}
    bad = Memcli(config=cfg)("consolidate", "--stage", "facs")
    assert bad.exit_code == 2 and "unknown stage 'facs'" in bad.stderr and bad.stdout == ""
    assert "(did you mean 'facts'?)" in bad.stderr and "\n  fix: --stage takes: " in bad.stderr
    bad = Memcli(config=cfg)("consolidate", "--limit", "0")
    assert bad.exit_code == 2


def test_unreachable_model_exits_5(chat_store: Path, fake_server: FakeModelServer) -> None:
    cfg = config_file(chat_store, fake_server, llm_url=refused_url())
    result = Memcli(config=cfg)("consolidate", "--flush")
    assert result.exit_code == 5
    assert "cannot reach Ollama" in result.stderr and result.stdout == ""
    assert _counts(cfg)[0] == {"episode": 28}


def test_help_has_examples() -> None:
    result = Memcli()("consolidate", "--help")
    assert result.exit_code == 0
    for text in ("--flush", "--stage", "--limit", "--dry-run", "--no-llm", "Examples", "cron"):
        assert text in result.stdout


def test_inspect_shows_consolidation_health(chat_store: Path, fake_server: FakeModelServer) -> None:
    llm = ScriptedLLM()
    llm.always_bad = {"reflect"}
    fake_server.responder = llm
    cfg = config_file(chat_store, fake_server)
    assert Memcli(config=cfg)("consolidate", "--flush").exit_code == 0  # reflect left pending
    data = json.loads(Memcli(config=cfg)("--json", "inspect").stdout)
    health = data["consolidation"]
    assert {"nodes", "edges", "sessions", "embedding"} <= set(data)  # existing keys kept
    assert health["last_runs"]["reflect"]["failures"] > 0
    assert health["pending"]["reflect"] > 0 and health["pending"]["segment"] == 0
    assert health["totals"]["prompt_tokens"] > 0
    text = Memcli(config=cfg)("inspect")
    assert text.exit_code == 0 and "consolidation" in text.stdout and "reflect" in text.stdout


# -- processes: the lock, kill and resume -------------------------------------------------------


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_ready,
    )


def test_second_run_exits_at_once_while_the_lock_is_held(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    cfg = config_file(chat_store, fake_server, llm=False)
    holder = _spawn(
        "-c",
        "import sys, time; from memcli.store import open_store;"
        f" s = open_store({str(chat_store / 'memory.db')!r}); s.try_lock('consolidate');"
        " print('locked', flush=True); time.sleep(60)",
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        result = Memcli(config=cfg)("consolidate", "--no-llm", "--flush")
        assert time.monotonic() - started < 5
        assert result.exit_code == 0 and result.stdout == ""
        assert "another consolidation is running" in result.stderr
        assert f"pid {holder.pid}" in result.stderr
        as_json = Memcli(config=cfg)("--json", "consolidate")
        assert json.loads(as_json.stdout)["locked"] is True
        assert _counts(cfg)[0] == {"episode": 28}
    finally:
        holder.kill()
        holder.wait()
    # The holder died without unlocking: the next run takes the lock over.
    assert Memcli(config=cfg)("consolidate", "--no-llm", "--flush").exit_code == 0
    assert _counts(cfg)[0]["segment"] > 0


def _pending(db: Path) -> tuple[int, list[str]]:
    """(turns not yet in a segment, status of the last run of each stage)."""
    with open_store(db) as store:
        runs = [r["status"] for r in store.last_runs("default")]
        return len(store.unprocessed("default", "segment")), runs


def _distinct_long_chat(path: Path, sessions: int) -> Path:
    """`long_chat` with each session's words made its own, so no embedding is a cache hit
    and segmenting takes several embedding calls."""
    long_chat(path, sessions)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["content"] = f"In {row['session']} {row['content']}"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _caught_partway(tmp_path: Path, fake: FakeModelServer) -> tuple[Path, Path, int, Any]:
    """Two copies of one ingested store (a and b) and a `consolidate` on a that is held at
    the fake server partway: some windows are written, the next embedding call waits."""
    cfg_a = config_file(tmp_path / "a", fake)
    _ingest(cfg_a, _distinct_long_chat(tmp_path / "long.jsonl", 40))
    turns = _counts(cfg_a)[0]["episode"]
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    config_file(tmp_path / "b", fake)
    fake.hold(after=1)  # the first batch is answered and written; the second one waits
    proc = _spawn("-m", "memcli", "--config", str(cfg_a), "consolidate", "--no-llm", "--flush")
    deadline = time.monotonic() + 60
    while not fake.held() and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    assert fake.held()
    return cfg_a, tmp_path / "b" / "memcli.yaml", turns, proc


def _resumes_to_the_same_graph(cfg_a: Path, cfg_b: Path, fake: FakeModelServer) -> None:
    fake.release()
    resumed = Memcli(config=cfg_a)("consolidate", "--no-llm", "--flush")
    assert resumed.exit_code == 0, resumed.stderr
    straight = Memcli(config=cfg_b)("consolidate", "--no-llm", "--flush")
    assert straight.exit_code == 0, straight.stderr
    assert _counts(cfg_a) == _counts(cfg_b)
    pending, statuses = _pending(cfg_a.parent / "memory.db")
    assert pending == 0 and "running" not in statuses and "interrupted" not in statuses


def test_killed_run_resumes_to_the_same_graph(tmp_path: Path, fake_server: FakeModelServer) -> None:
    cfg_a, cfg_b, turns, proc = _caught_partway(tmp_path, fake_server)
    started = time.monotonic()
    meanwhile = Memcli(config=cfg_a)("consolidate", "--no-llm", "--flush")
    assert meanwhile.exit_code == 0 and "another consolidation is running" in meanwhile.stderr
    assert time.monotonic() - started < 5
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    pending, statuses = _pending(cfg_a.parent / "memory.db")
    assert 0 < pending < turns and "running" in statuses  # stopped partway, mid-stage
    _resumes_to_the_same_graph(cfg_a, cfg_b, fake_server)


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "Ctrl-C"]
)
def test_a_stopped_run_records_interrupted_and_the_next_resumes(
    tmp_path: Path, fake_server: FakeModelServer, signum: int, code: int
) -> None:
    cfg_a, cfg_b, turns, proc = _caught_partway(tmp_path, fake_server)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == code, stderr
    assert "interrupted" in stderr or "terminated" in stderr
    pending, _ = _pending(cfg_a.parent / "memory.db")
    assert 0 < pending < turns
    with open_store(cfg_a.parent / "memory.db") as store:
        runs = {r["stage"]: r for r in store.last_runs("default")}
    assert runs["segment"]["status"] == "interrupted"  # not "running", not "failed"
    assert runs["segment"]["finished_at"] and runs["segment"]["nodes"] > 0
    _resumes_to_the_same_graph(cfg_a, cfg_b, fake_server)


# -- failures that leave work undone ------------------------------------------------------------


def test_failed_model_calls_warn_after_progress_and_exit_8_when_nothing_was_done(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    llm = ScriptedLLM()
    llm.always_bad = {"reflect"}
    fake_server.responder = llm
    cfg = config_file(chat_store, fake_server)
    first = Memcli(config=cfg)("consolidate", "--flush")  # all done but reflect: a warning
    assert first.exit_code == 0, first.stderr
    assert "memcli: warning: " in first.stderr and "failed (reflect " in first.stderr
    waiting = first.stdout[first.stdout.index("waiting for the next run:") :]
    assert re.search(r"reflect: \d+ facts \(\d+ model repl(y|ies) stayed invalid", waiting)
    assert "segment" not in waiting  # everything else was done
    pending = json.loads(Memcli(config=cfg)("--json", "inspect").stdout)["consolidation"]
    assert pending["pending"]["reflect"] > 0

    result = Memcli(config=cfg)("-q", "consolidate")  # nothing but the failing work: exit 8
    assert result.exit_code == 8, result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()  # one line for the cron mail, nothing else
    assert line.startswith("memcli: error: ") and "failed (reflect " in line
    assert "pending for the next run" in line

    # The third failing run gives those units up: that is progress too (exit 0).
    third = Memcli(config=cfg)("--json", "consolidate")
    assert third.exit_code == 0, third.stderr
    report = json.loads(third.stdout)
    assert report["stages"]["reflect"]["given_up_invalid"] > 0
    assert "reflect" not in report["waiting"]

    llm.always_bad = set()  # the model behaves again: nothing left to fail, exit 0
    healed = Memcli(config=cfg)("-q", "consolidate")
    assert healed.exit_code == 0 and healed.stderr == "" and healed.stdout == ""


def test_what_waits_and_why_under_json(chat_store: Path, fake_server: FakeModelServer) -> None:
    llm = ScriptedLLM()
    llm.always_bad = {"reflect"}
    fake_server.responder = llm
    cfg = config_file(chat_store, fake_server)
    result = Memcli(config=cfg)("--json", "consolidate", "--flush")
    assert result.exit_code == 0, result.stderr
    waiting = json.loads(result.stdout)["waiting"]
    pending = json.loads(Memcli(config=cfg)("--json", "inspect").stdout)["consolidation"]
    assert set(waiting) == {"reflect"} and waiting["reflect"]["unit"] == "fact"
    assert waiting["reflect"]["units"] == pending["pending"]["reflect"] > 0
    assert "stayed invalid" in waiting["reflect"]["why"]
    assert "failed (reflect " in json.loads(result.stderr)["warning"]


def test_a_run_that_made_progress_is_silent_under_q_despite_failures(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    llm = ScriptedLLM()
    llm.always_bad = {"reflect"}
    fake_server.responder = llm
    result = Memcli(config=config_file(chat_store, fake_server))("-q", "consolidate", "--flush")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_a_run_without_failures_stays_silent_under_q(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = ScriptedLLM()
    cfg = config_file(chat_store, fake_server)
    result = Memcli(config=cfg)("-q", "consolidate", "--flush")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")


def test_stage_help_names_every_stage() -> None:
    from memcli.consolidate.registry import STAGES

    help_text = " ".join(Memcli().ok("consolidate", "--help").stdout.split())
    for stage in STAGES:
        assert stage in help_text, stage


@pytest.mark.parametrize(
    ("task", "stage", "kind"),
    [
        ("extract", "facts", "episode"),
        ("relate", "link", "segment"),
        ("summarize", "summarize", "segment"),
        ("extract", "entities", "segment"),
        ("supersede", "supersede", "fact"),
        ("reflect", "reflect", "fact"),
    ],
)
def test_a_unit_whose_replies_never_validate_is_given_up_after_three_runs(
    chat_store: Path, fake_server: FakeModelServer, task: str, stage: str, kind: str
) -> None:
    llm = ScriptedLLM()
    llm.always_bad = {task}
    fake_server.responder = llm
    mem = opened(chat_store, fake_server)
    for run in (1, 2):
        report = mem.consolidate(flush=True).stage(stage)
        assert report.failures > 0 and report.pending > 0, run
        assert "given_up_invalid" not in report.extra
    third = mem.consolidate(flush=True).stage(stage)
    assert third.failures > 0 and third.extra["given_up_invalid"] > 0
    assert mem.store.unprocessed("default", stage, kind=kind) == []
    asked = llm.calls[task]
    fourth = mem.consolidate(flush=True).stage(stage)
    assert fourth.failures == 0 and fourth.pending == 0 and llm.calls[task] == asked
    if stage == "entities":  # given up on the model, not on the names the rules find
        assert mem.store.count_nodes("default").get("entity", 0) > 0
    cfg = config_file(chat_store, fake_server)
    health = json.loads(Memcli(config=cfg)("--json", "inspect").stdout)["consolidation"]
    # One request serves facts and entities: both stages give it up.
    both = {"facts", "entities"} if task == "extract" else {stage}
    assert set(health["given_up"]) == both
    assert health["given_up"][stage] == third.extra["given_up_invalid"]
    shown = Memcli(config=cfg)("inspect").stdout
    assert "given up after replies that never validated in 3 runs: " in " ".join(shown.split())
