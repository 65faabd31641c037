"""`memcli reindex` can be stopped and resumed: its vectors go to a side table a batch at a
time while the store keeps its old ones, so a kill or Ctrl-C leaves the store usable with the
old model, says so to the new one, and the next reindex embeds only what is missing. The end
is the same store as one uninterrupted reindex makes."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcli.config import load_config
from memcli.llm.embedder import PIPELINE_BATCH
from memcli.memory import Memory
from memcli.store import open_store
from tests.cli_runner import REPO, Memcli, clean_env, ctrl_c_ready, run_process
from tests.fakeserver import FakeModelServer

TURNS = 1_200  # five batches of PIPELINE_BATCH


def _letters(n: int) -> str:
    """A word of letters only for a number (the words of turns are letters only)."""
    word = ""
    while True:
        n, d = divmod(n, 26)
        word += chr(97 + d)
        if not n:
            return "qz" + word


def _chat(path: Path, turns: int = TURNS) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(turns):
            turn = {
                "content": f"turn {i} is about topic {i % 29}, the code {_letters(i)} and the "
                f"word {_letters(i + 50_000)}",
                "speaker": "Ann" if i % 2 else "Ben",
                "session": f"s{i // 100:02d}",
                "timestamp": f"2024-02-{1 + i // 100:02d}T10:{i % 60:02d}:00",
            }
            fh.write(json.dumps(turn) + "\n")
    return path


def _config(path: Path, server: FakeModelServer, model: str) -> Path:
    path.write_text(
        f"embedding:\n  provider: ollama\n  model: {model}\n  url: {server.ollama_url}\n"
        f"  max_retries: 0\n  batch_size: {PIPELINE_BATCH}\n"  # a request per batch
    )
    return path


@pytest.fixture
def new_model() -> Iterator[FakeModelServer]:
    """The model the store is moved to: its vectors are not the old model's (48, not 64
    dimensions), so a vector the move missed would show."""
    with FakeModelServer(dim=48) as server:
        yield server


def _all_vectors(target: str | Path) -> dict[int, Any]:
    with open_store(target) as store:
        ids = [r[0] for r in store.all_nodes_for_embedding()]
        return store.get_vectors(ids)


def _same_vectors(a: dict[int, Any], b: dict[int, Any]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[i], b[i]) for i in a)


def test_a_killed_reindex_resumes_to_the_vectors_of_an_uninterrupted_one(
    tmp_path: Path, fake_server: FakeModelServer, new_model: FakeModelServer
) -> None:
    db, twin = tmp_path / "m.db", tmp_path / "twin.db"
    old = _config(tmp_path / "old.yaml", fake_server, "old-embed")
    new = _config(tmp_path / "new.yaml", new_model, "new-embed")
    Memcli(config=old, db=db).ok("ingest", _chat(tmp_path / "chat.jsonl"))
    shutil.copy(db, twin)
    new_model.hold(after=2)  # two batches answered, the third waits: killed there
    proc = subprocess.Popen(
        [sys.executable, "-m", "memcli", "--db", str(db), "reindex"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO,
        env=clean_env(MEMCLI_CONFIG=str(new)),
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not new_model.held() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert new_model.held(), "the reindex never reached its third batch"
    time.sleep(0.2)  # the second batch's commit has long happened: it waited for the third
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    new_model.release()

    # In between: the old model still answers, the new one is told to finish the reindex.
    before = Memcli(config=old, db=db)
    assert before.json("ask", "--context-only", "--strategy", "semantic", "topic 7")[0]["hits"]
    refused = Memcli(config=new, db=db)("ask", "--context-only", "topic 7")
    assert refused.exit_code == 3
    stopped = f"a reindex to ollama:new-embed embedded {2 * PIPELINE_BATCH:,} nodes"
    assert stopped in refused.stderr and "finish that reindex" in refused.stderr

    done = run_process("--db", str(db), "--json", "reindex", env=clean_env(MEMCLI_CONFIG=str(new)))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["resumed"] == 2 * PIPELINE_BATCH
    assert report["resumed"] + report["embedded"] == report["nodes"] == TURNS
    assert report["dim"] == 48 and report["embedding"] == "ollama:new-embed"

    whole = run_process(
        "--db", str(twin), "--json", "reindex", env=clean_env(MEMCLI_CONFIG=str(new))
    )
    assert json.loads(whole.stdout)["resumed"] == 0
    assert _same_vectors(_all_vectors(db), _all_vectors(twin))
    with open_store(db) as store:
        assert store.reindex_digests() == {}  # the side table is gone
        assert store.get_meta("embedding.identity") == "ollama:new-embed"
    after = Memcli(config=new, db=db).json("ask", "--context-only", "topic 7")[0]["hits"]
    assert after == Memcli(config=new, db=twin).json("ask", "--context-only", "topic 7")[0]["hits"]


class _Interrupt:
    """A progress that presses Ctrl-C once `stage` has advanced `after` items."""

    def __init__(self, stage: str, after: int) -> None:
        self.stage, self.after, self.current, self.seen = stage, after, "", 0

    def start(self, description: str, total: int | None) -> None:
        self.current, self.seen = description, 0

    def advance(self, amount: int = 1) -> None:
        self.seen += amount
        if self.current == self.stage and self.seen >= self.after:
            raise KeyboardInterrupt

    def finish(self) -> None:
        pass


def _memory(tmp_path: Path, target: str, server: FakeModelServer, model: str) -> Memory:
    config = _config(tmp_path / f"{model}.yaml", server, model)
    return Memory(load_config(str(config), overrides={"db": target}))


def test_ctrl_c_then_resume_on_both_backends(
    tmp_path: Path, store_target: str, fake_server: FakeModelServer,
    new_model: FakeModelServer, request: pytest.FixtureRequest,
) -> None:  # fmt: skip
    chat = _chat(tmp_path / "chat.jsonl", 700)
    twin = (
        request.getfixturevalue("pg_server").fresh_url()
        if store_target.startswith("postgresql")
        else str(tmp_path / "twin.db")
    )
    for target in (store_target, twin):
        with _memory(tmp_path, target, fake_server, "old-embed") as mem:
            mem.ingest(str(chat))
            mem.consolidate(flush=True, no_llm=True)
    with _memory(tmp_path, store_target, new_model, "new-embed") as mem:
        with pytest.raises(KeyboardInterrupt):
            mem.reindex(progress=_Interrupt("re-embedding", PIPELINE_BATCH))
        assert mem.stored_identity() == "ollama:old-embed"
        assert len(mem.store.reindex_digests()) == PIPELINE_BATCH
    with _memory(tmp_path, store_target, fake_server, "old-embed") as mem:
        mem.add("A late turn, written while the reindex was stopped", role="user")
        assert mem.recall("late turn", strategy="semantic").hits
    with _memory(tmp_path, twin, fake_server, "old-embed") as mem:
        mem.add("A late turn, written while the reindex was stopped", role="user")
    with _memory(tmp_path, store_target, new_model, "new-embed") as mem:
        report = mem.reindex()
        assert report["resumed"] == PIPELINE_BATCH
        assert report["resumed"] + report["embedded"] == report["nodes"]
    with _memory(tmp_path, twin, new_model, "new-embed") as mem:
        whole = mem.reindex()
    assert whole["nodes"] == report["nodes"] and whole["words"] == report["words"]
    assert _same_vectors(_all_vectors(store_target), _all_vectors(twin))


def test_a_reindex_stopped_in_the_words_finishes_them_alone(
    tmp_path: Path, fake_server: FakeModelServer, new_model: FakeModelServer
) -> None:
    target = str(tmp_path / "m.db")
    with _memory(tmp_path, target, fake_server, "old-embed") as mem:
        mem.ingest(str(_chat(tmp_path / "chat.jsonl", 600)))
        mem.consolidate(flush=True, no_llm=True)  # 1,200 words of their own: 3 batches
    with _memory(tmp_path, target, new_model, "new-embed") as mem:
        with pytest.raises(KeyboardInterrupt):
            mem.reindex(progress=_Interrupt("embedding words", 1))
        assert mem.stored_identity() == "ollama:new-embed"  # swapped: usable with it now
        assert mem.recall("topic 7", strategy="semantic").hits
        asked = len(new_model.requests_to("/api/embed"))
        report = mem.reindex()
        assert report["embedded"] == 0 and report["resumed"] == report["nodes"] >= 600
        assert report["words"] > 0
        assert mem.store.count_unembedded_words("default") == 0
        sent = [t for r in new_model.requests_to("/api/embed")[asked:] for t in r.body["input"]]
        assert len(sent) == report["words"] and all(" " not in t for t in sent)  # no turn


def test_a_stopped_reindex_to_another_model_is_not_resumed(
    tmp_path: Path, fake_server: FakeModelServer, new_model: FakeModelServer
) -> None:
    target = str(tmp_path / "m.db")
    with _memory(tmp_path, target, fake_server, "old-embed") as mem:
        mem.ingest(str(_chat(tmp_path / "chat.jsonl", 600)))
    with (
        _memory(tmp_path, target, new_model, "new-embed") as mem,
        pytest.raises(KeyboardInterrupt),
    ):
        mem.reindex(progress=_Interrupt("re-embedding", PIPELINE_BATCH))
    cli = Memcli(config=_config(tmp_path / "old.yaml", fake_server, "old-embed"), db=target)
    result = cli("--json", "doctor")
    model = next(
        r for r in map(json.loads, result.stdout.splitlines()) if r["check"] == "store model"
    )
    assert (
        model["status"] == "warn" and "reindex to ollama:new-embed was stopped" in model["detail"]
    )
    with _memory(tmp_path, target, new_model, "third-embed") as mem:
        report = mem.reindex()
        assert report["resumed"] == 0 and report["embedded"] == 600
        assert mem.stored_identity() == "ollama:third-embed"


def test_ctrl_c_on_the_command_line_says_how_to_resume(
    tmp_path: Path, fake_server: FakeModelServer, new_model: FakeModelServer
) -> None:
    db = tmp_path / "m.db"
    old = _config(tmp_path / "old.yaml", fake_server, "old-embed")
    new = _config(tmp_path / "new.yaml", new_model, "new-embed")
    Memcli(config=old, db=db).ok("ingest", _chat(tmp_path / "chat.jsonl", 600))
    new_model.hold(after=1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "memcli", "--db", str(db), "reindex"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, text=True,
        env=clean_env(MEMCLI_CONFIG=str(new)), preexec_fn=ctrl_c_ready,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not new_model.held() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    new_model.release()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "run `memcli reindex` again: it resumes" in stderr
    again = Memcli(config=new, db=db).json("reindex")[0]
    assert again["resumed"] == PIPELINE_BATCH and again["embedded"] == 600 - PIPELINE_BATCH
