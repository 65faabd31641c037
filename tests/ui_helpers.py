"""A small store for the web page's tests, and the page over it (memcli.ui).

The store holds an ingested chat (episodes with their source file), a topic segment, two
facts about one entity where the newer supersedes the older, and a turn whose text is
markup, so every page has something to show and escaping can be checked.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memcli.config import Config, EmbeddingConfig, LLMConfig
from memcli.memory import Memory
from memcli.store import open_store
from tests.cli_runner import REPO, clean_env
from tests.graph_helpers import Builder

PORT = 8766
TOKEN = "test-token-0123456789abcdef"
BASE = f"http://127.0.0.1:{PORT}"
MARKUP = '<script>alert("x")</script><b>bold</b>'

TURNS = [
    ("Ana", "I moved to Porto in March, near the river."),
    ("Ben", "Porto! Which part of the city?"),
    ("Ana", "Ribeira, close to the old bridge."),
    ("Ben", "I still live in Lisbon, by the castle."),
    ("Ana", MARKUP),
]


def config(db: Path) -> Config:
    """Settings with no models at all: full-text search only, nothing to download."""
    return Config(
        db=str(db), embedding=EmbeddingConfig(provider="none"), llm=LLMConfig(provider="none")
    )


def build(folder: Path) -> dict[str, Any]:
    """The store at folder/memory.db; returns its path, the chat file and node ids."""
    chat = folder / "chat.jsonl"
    rows = [
        {"role": who, "content": text, "session": "trip", "timestamp": f"2024-03-0{i + 1}T10:00:00"}
        for i, (who, text) in enumerate(TURNS)
    ]
    chat.write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = folder / "memory.db"
    with Memory(config(db)) as mem:
        mem.ingest([str(chat)])
    with open_store(db) as store:
        turns = [n.id for n in store.session_turns("default", "trip")]
    b = Builder(db, vectors=False)
    topic = b.node("segment", "Moving house: Porto and Lisbon")
    entity = b.node("entity", "Ana", props={"description": "a friend who moved"})
    old = b.node("fact", "Ana lives in Lisbon", belief=0.9, status="superseded",
                 props={"valid_from": "2023-01-01", "valid_to": "2024-03-01"})  # fmt: skip
    new = b.node("fact", "Ana lives in Porto", belief=0.9, props={"valid_from": "2024-03-01"})
    for turn in turns[:3]:
        b.edge(turn, topic, "PART_OF")
    b.edge(old, turns[3], "DERIVED_FROM")
    b.edge(new, turns[0], "DERIVED_FROM")
    b.edge(new, old, "SUPERSEDES")
    for node in (turns[0], old, new):
        b.edge(node, entity, "MENTIONS")
    b.close()
    ids = {"turns": [f"ep{t}" for t in turns], "topic": f"sg{topic}", "entity": f"en{entity}"}
    return {"db": db, "chat": chat, **ids, "old": f"fa{old}", "new": f"fa{new}"}


@contextmanager
def page_client(db: Path, port: int = PORT, token: str = TOKEN) -> Iterator[Any]:
    """A starlette TestClient on the page over the store, read-only, at 127.0.0.1:`port`,
    not yet holding the token's cookie."""
    from starlette.testclient import TestClient

    from memcli.ui.app import build_app
    from memcli.ui.server import open_memory

    mem = open_memory(config(db))
    try:
        app = build_app(mem, token, port)
        with TestClient(app, base_url=f"http://127.0.0.1:{port}") as client:
            yield client
    finally:
        mem.close()


def signed_in(client: Any, token: str = TOKEN) -> Any:
    """The client after its first visit with the token (it now holds the cookie)."""
    first = client.get(f"/?token={token}")
    assert first.status_code == 200, first.text
    return client


FIRST_LINE = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{20,})$")


@contextmanager
def served(db: Path, folder: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`memcli ui --port 0 --no-browser` on the store, as a real process (models off by a
    config file in `folder`); yields the first line it printed and the process, and stops
    it afterwards."""
    cfg = folder / "ui.yaml"
    cfg.write_text(f"db: {db}\nembedding:\n  provider: none\nllm:\n  provider: none\n")
    command = [sys.executable, "-m", "memcli", "--config", str(cfg), "ui", "--port", "0"]
    proc = subprocess.Popen(
        [*command, "--no-browser", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=clean_env(), cwd=REPO,
    )  # fmt: skip
    try:
        line = _first_line(proc)
        yield line, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def _first_line(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The process's first stdout line, read in a thread so a silent process cannot hang
    the test."""
    assert proc.stdout is not None and proc.stderr is not None
    out, found = proc.stdout, []
    reader = threading.Thread(target=lambda: found.append(out.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if not (found and found[0]):
        err = proc.stderr.read() if proc.poll() is not None else "(still running)"
        raise AssertionError(f"memcli ui printed no address; stderr: {err}")
    return found[0].rstrip("\n")
