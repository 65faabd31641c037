"""A store and its copy made by `export` then `import` answer alike: the copy embeds the
words of turns only where the original had (an ingest-only store has none embedded), keeps
every turn's full-text context, and is about the original's size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memcli.store import open_store
from memcli.store.sqlite.search_tables import text_tables
from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.stores import StoreCache

STRATEGIES = ("hybrid", "dwpr", "gam", "beam", "watercircles", "astar", "semantic", "lexical")
QUESTIONS = (
    "What did Ana make at the woodturning class?\n"
    "When is the plot inspection for the allotment?\n"
    "Who called about the garden plot?\n"
    "What does the teacher say about oak?\n"
)


def _cli(folder: Path, server: FakeModelServer, db: Path) -> Memcli:
    return Memcli(config=config_file(folder, server, llm=False), db=db)


def _state(db: Path) -> dict[str, Any]:
    """What retrieval reads besides nodes and vectors: which words have a vector, and each
    node's full-text row with its context."""
    with open_store(db) as store:
        words = store.conn.execute("SELECT word, turns, vector IS NOT NULL FROM words")
        words = sorted(words.fetchall())
        [(_, table)] = text_tables(store.db)
        rows = store.conn.execute(f"SELECT rowid, text, speaker, kind, context FROM {table}")
        return {"words": words, "text": sorted(rows.fetchall())}


def _contexts(cli: Memcli) -> dict[str, str]:
    return {
        s: cli.ok("ask", "--context-only", "--strategy", s, "-k", 5, "-", input=QUESTIONS).stdout
        for s in STRATEGIES
    }


@pytest.mark.parametrize("vectors", [False, True], ids=["re-embedded", "with-vectors"])
@pytest.mark.parametrize("build", ["chat", "chat-no-llm"], ids=["ingest-only", "consolidated"])
def test_the_copy_answers_like_the_original(
    stores: StoreCache, fake_server: FakeModelServer, tmp_path: Path, build: str, vectors: bool
) -> None:
    original = stores.copy(build, tmp_path / "a" / "memory.db").path
    source = _cli(tmp_path / "a", fake_server, original)
    dump = tmp_path / "dump.jsonl"
    source.ok("export", "-o", dump, *(["--vectors"] if vectors else []))
    copy = tmp_path / "b" / "memory.db"
    _cli(tmp_path / "b", fake_server, copy).ok("import", dump)

    before, after = _state(original), _state(copy)
    embedded = sum(1 for _, _, has in before["words"] if has)
    assert (embedded > 0) == (build == "chat-no-llm")  # consolidation embeds the words
    assert after["words"] == before["words"]
    assert after["text"] == before["text"] and any(row[4] for row in before["text"])
    assert _contexts(_cli(tmp_path / "b", fake_server, copy)) == _contexts(source)
    # The copy was four times the original's size when it embedded every word.
    assert copy.stat().st_size <= 1.25 * original.stat().st_size
