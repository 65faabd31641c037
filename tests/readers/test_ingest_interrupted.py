"""A multi-file ingest commits file by file: Ctrl-C while the second file is being embedded
keeps the first (exit 130), and running the same command again stores the rest."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.cli_runner import REPO, clean_env, ctrl_c_ready
from tests.fakeserver import FakeModelServer


def _chat(path: Path, session: str, turns: int) -> Path:
    rows = [{"session": session, "role": "user", "content": f"{session} turn {i}: note {i}"}
            for i in range(turns)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _episodes(db: Path) -> int:
    """Committed turns, read without memcli (as another program would see the file)."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT count(*) FROM nodes WHERE kind = 'episode'").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        conn.close()


def _wait(condition: object, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_after_the_first_file_keeps_it(tmp_path: Path, fake_server: FakeModelServer) -> None:
    config = tmp_path / "memcli.yaml"
    config.write_text(
        "embedding:\n  provider: ollama\n  model: fake-embed\n"
        f"  url: {fake_server.ollama_url}\n  batch_size: 1\n"  # a request per turn
    )
    first, second = _chat(tmp_path / "a.jsonl", "a", 3), _chat(tmp_path / "b.jsonl", "b", 5)
    db = tmp_path / "m.db"
    argv = [sys.executable, "-m", "memcli", "--config", str(config), "--db", str(db), "ingest"]
    fake_server.hold(after=3)  # the first file's turns are embedded; the second file's wait
    proc = subprocess.Popen(
        [*argv, str(first), str(second)], env=clean_env(), cwd=REPO, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ctrl_c_ready,
    )  # fmt: skip
    try:
        committed = _wait(lambda: fake_server.held() and _episodes(db) == 3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        fake_server.release()
    assert committed, "the first file was not committed before the second was embedded"
    assert proc.returncode == 130, err
    assert out == "" and "interrupted" in err.lower()
    assert _episodes(db) == 3
    again = subprocess.run(
        [*argv, "--json", str(first), str(second)], env=clean_env(), cwd=REPO, text=True,
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["new"], report["skipped"]) == (5, 3)
    assert _episodes(db) == 8
