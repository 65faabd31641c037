"""A turn is found by full-text search through the turns just before it in its session
(memcli.store.sqlite.fts): ingest, `memcli add`, prune (a forgotten turn leaves no trace in the
context of the turns after it) and export/import."""

from __future__ import annotations

import json
from pathlib import Path

from memcli.store import open_store
from tests.cli_runner import Memcli

TURNS = [
    {"id": "t1", "session": "s1", "speaker": "Ana", "content": "We repainted the garden shed."},
    {"id": "t2", "session": "s1", "speaker": "Bo", "content": "Which colour did you pick?"},
    {"id": "t3", "session": "s1", "speaker": "Ana", "content": "Moss green, by far!"},
    {"id": "t4", "session": "s1", "speaker": "Bo", "content": "Ha, of course."},
    {"id": "t5", "session": "s1", "speaker": "Ana", "content": "Next week: the fence."},
    {"id": "u1", "session": "s2", "speaker": "Ana", "content": "Busy day at work today."},
]


def _cli(tmp_path: Path, name: str = "m.db") -> Memcli:
    cfg = tmp_path / "config.yaml"
    cfg.write_text("embedding:\n  provider: none\nllm:\n  provider: none\n")
    return Memcli(config=cfg, db=tmp_path / name)


def _ingest(tmp_path: Path, cli: Memcli) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps(t) + "\n" for t in TURNS))
    cli.ok("ingest", str(chat))


def _found(cli: Memcli, query: str) -> list[str]:
    out = cli.json("ask", query, "--strategy", "lexical", "--context-only", "-k", "10")
    return [h["ref"] for h in out[0]["hits"]]


def test_a_turn_is_found_through_the_turns_before_it(tmp_path: Path) -> None:
    cli = _cli(tmp_path)
    _ingest(tmp_path, cli)
    # The turn that answers names neither the garden nor the shed; its context does, and
    # the turn that names them ranks first. Context reaches two turns back, no further.
    assert _found(cli, "garden shed") == ["t1", "t2", "t3"]
    greens = _found(cli, "moss green")
    assert greens[0] == "t3" and sorted(greens[1:]) == ["t4", "t5"]
    # A session's first turn has no context from the session before.
    assert "u1" not in _found(cli, "fence")


def test_added_turns_take_their_context_from_the_session(tmp_path: Path) -> None:
    cli = _cli(tmp_path)
    _ingest(tmp_path, cli)
    cli.ok("add", "--role", "Bo", "--session", "s1", "Sounds fun, enjoy it.")
    out = cli.json("ask", "fence", "--strategy", "lexical", "--context-only", "-k", "10")
    assert [h["text"] for h in out[0]["hits"]] == ["Next week: the fence.", "Sounds fun, enjoy it."]


def test_a_pruned_turn_leaves_nothing_in_the_context_of_the_turns_after_it(
    tmp_path: Path,
) -> None:
    cli = _cli(tmp_path)
    _ingest(tmp_path, cli)
    assert _found(cli, "shed") == ["t1", "t2", "t3"]
    node = cli.json("ask", "moss green", "--strategy", "lexical", "--context-only", "-k", "1")
    cli.ok("prune", "--node", node[0]["hits"][0]["node_id"], "--yes")
    assert _found(cli, "moss green") == []
    # The turns after it now follow the turns before it.
    assert _found(cli, "shed") == ["t1", "t2", "t4"]
    with open_store(tmp_path / "m.db") as store:
        table = store.conn.execute("SELECT 'fts_' || id FROM fts_spaces").fetchone()[0]
        contexts = [r[0] for r in store.conn.execute(f"SELECT context FROM {table}")]
    assert not any("moss" in c.lower() for c in contexts)


def test_export_and_import_keep_the_context(tmp_path: Path) -> None:
    cli = _cli(tmp_path)
    _ingest(tmp_path, cli)
    dump = tmp_path / "dump.jsonl"
    cli.ok("export", "-o", str(dump))
    restored = _cli(tmp_path, "restored.db")
    restored.ok("import", str(dump))
    assert _found(restored, "garden shed") == _found(cli, "garden shed")
