"""Many writers on one Postgres store: processes ingesting at once, the same file twice at
once, and the consolidation lock as an advisory lock that the server frees with its holder."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memcli.store import open_store
from tests.cli_runner import REPO, clean_env, run_process
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer

pytestmark = pytest.mark.postgres

HOLDER = """
import sys
import threading
from memcli.store import open_store
store = open_store(sys.argv[1])
with store.consolidation_lock() as holder:
    print("held" if holder is None else "refused", flush=True)
    sys.stdin.readline()
"""


def _chat(path: Path, n: int, turns: int = 120) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(turns):
            who = "Ann" if i % 2 else "Ben"
            text = f"chat {n} turn {i}: the ferry to island {n} left at {i % 24}h"
            fh.write(json.dumps({"content": text, "speaker": who, "session": f"s{i // 40}"}) + "\n")
    return path


def _memcli(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "memcli", *args], cwd=REPO, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _episodes(target: str) -> int:
    with open_store(target) as store:
        return sum(store.count_nodes(space).get("episode", 0) for space in store.spaces())


def test_four_processes_ingesting_four_chats_at_once(
    pg_url: str, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    env = clean_env(MEMCLI_CONFIG=str(config_file(tmp_path, fake_server, llm=False)))
    chats = [_chat(tmp_path / f"chat{n}.jsonl", n) for n in range(4)]
    running = [_memcli("--db", pg_url, "ingest", str(chat), env=env) for chat in chats]
    results = [(p.wait(timeout=300), p.communicate()) for p in running]
    assert [code for code, _ in results] == [0, 0, 0, 0], [err for _, (_, err) in results]
    one_by_one = 0
    for n, chat in enumerate(chats):  # each into a store of its own
        alone = run_process("--db", str(tmp_path / f"alone{n}.db"), "ingest", str(chat), env=env)
        assert alone.returncode == 0, alone.stderr
        one_by_one += _episodes(str(tmp_path / f"alone{n}.db"))
    assert _episodes(pg_url) == one_by_one == 4 * 120
    with open_store(pg_url) as store:  # every turn has its vector, each session one chain
        assert store.run("SELECT count(*) FROM node_vectors").fetchone()[0] == one_by_one
        assert store.count_edges("default") == {"NEXT": one_by_one - 3}  # 3 sessions


def test_the_same_file_ingested_by_two_processes_at_once_is_stored_once(
    pg_url: str, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    env = clean_env(MEMCLI_CONFIG=str(config_file(tmp_path, fake_server, llm=False)))
    chat = _chat(tmp_path / "chat.jsonl", 0)
    running = [_memcli("--db", pg_url, "ingest", str(chat), env=env) for _ in range(2)]
    assert [p.wait(timeout=300) for p in running] == [0, 0]
    assert _episodes(pg_url) == 120
    with open_store(pg_url) as store:
        assert len(store.sources("default")) == 1
        assert store.count_edges("default") == {"NEXT": 117}


def test_a_second_consolidate_exits_at_once_while_one_holds_the_lock(
    pg_url: str, tmp_path: Path
) -> None:
    env = clean_env(MEMCLI_CONFIG=str(tmp_path / "none.yaml"))
    (tmp_path / "none.yaml").write_text('{"embedding": {"provider": "none"}}', encoding="utf-8")
    assert run_process("--db", pg_url, "ingest", str(_chat(tmp_path / "c.jsonl", 1)),
                       env=env).returncode == 0  # fmt: skip
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, pg_url], cwd=REPO, env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        second = run_process("--db", pg_url, "consolidate", "--no-llm", env=env)
        assert second.returncode == 0, second.stderr
        assert time.monotonic() - started < 30 and str(holder.pid) in second.stderr
        with open_store(pg_url) as store:
            assert store.count_nodes("default") == {"episode": 120}  # nothing consolidated
    finally:
        holder.kill()  # dies holding the lock: the server frees it with the connection
        holder.wait()
    after = run_process("--db", pg_url, "consolidate", "--no-llm", "--flush", env=env)
    assert after.returncode == 0, after.stderr
    with open_store(pg_url) as store:
        assert store.count_nodes("default").get("segment", 0) > 0


def test_a_writer_that_waited_for_the_lock_finds_the_vector_table_made_meanwhile(
    pg_url: str,
) -> None:
    first, second = open_store(pg_url), open_store(pg_url)
    errors: list[BaseException] = []

    def write_second() -> None:
        try:
            with second.transaction():  # its first statement reads the catalog
                second.ensure_vectors(4)
                (node,) = second.insert_nodes("default", "fact", [{"text": "second"}])
                second.put_vectors([(node, "default", "fact", [0, 1, 0, 0])])
        except BaseException as exc:
            errors.append(exc)

    try:
        assert not second.has_vectors()  # what it has seen of the catalog so far
        with first.transaction():
            (node,) = first.insert_nodes("default", "fact", [{"text": "first"}])
            first.ensure_vectors(4)
            first.put_vectors([(node, "default", "fact", [1, 0, 0, 0])])
            waiting = threading.Thread(target=write_second)
            waiting.start()
            time.sleep(1.0)  # the second writer now waits for the write lock
        waiting.join(timeout=60)
        assert errors == []
        assert len(second.vector_search("default", [1, 1, 0, 0], 5)) == 2
    finally:
        first.close()
        second.close()


def test_processes_opening_a_new_store_at_once_migrate_it_once(pg_url: str) -> None:
    code = "import sys; from memcli.store import open_store; open_store(sys.argv[1]).close()"
    running = [
        subprocess.Popen([sys.executable, "-c", code, pg_url], cwd=REPO, text=True,
                         stderr=subprocess.PIPE)
        for _ in range(4)
    ]  # fmt: skip
    assert [p.wait(timeout=120) for p in running] == [0, 0, 0, 0], [
        p.communicate()[1] for p in running
    ]
    from memcli.store.pg.migrations import MIGRATIONS

    with open_store(pg_url) as store:
        assert store.schema_version() == len(MIGRATIONS) == 6
