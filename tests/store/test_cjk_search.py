"""Full-text search finds Chinese, Japanese and Korean text: words there are not separated
by spaces, so the index holds each CJK character as a token and a query asks for the
character pairs of its CJK runs. Text without CJK is indexed and queried as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcli.store import open_store
from memcli.store.search import indexed_text
from memcli.store.sqlite.fts import fts_query
from tests.cli_runner import Memcli
from tests.reliability import write_config

TURNS = [
    ("c1", "我昨天终于去上了第一节陶艺课，做了一个歪歪扭扭的碗。"),
    ("c2", "下周我们要去杭州看西湖，我已经订好了火车票。"),
    ("j1", "来週、東京で写真の展示会があります。"),
    ("k1", "어제 처음으로 도자기 수업에 갔어요."),
    ("e1", "The glassblowing teacher says clay needs patience."),
]


@pytest.fixture
def cli(tmp_path: Path) -> Memcli:
    write_config(tmp_path)
    chat = tmp_path / "chat.jsonl"
    rows = [
        {"id": ref, "session": "s1", "timestamp": f"2024-05-0{n + 1}T10:00:00", "role": "user",
         "content": text}
        for n, (ref, text) in enumerate(TURNS)
    ]  # fmt: skip
    chat.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    memcli = Memcli(config=tmp_path / "memcli.yaml", db=tmp_path / "m.db")
    memcli.ok("-q", "ingest", chat)
    return memcli


def _found(cli: Memcli, question: str) -> list[str]:
    [answer] = cli.json("ask", "--strategy", "lexical", "--context-only", question)
    return [hit["text"] for hit in answer["hits"]]


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("陶艺课", TURNS[0][1]),  # Chinese: a word inside a sentence with no spaces
        ("我什么时候去杭州？", TURNS[1][1]),  # a whole question, its words unsegmented
        ("東京の展示会", TURNS[2][1]),  # Japanese
        ("수업", TURNS[3][1]),  # Korean: in the text the word has a particle attached
    ],
)
def test_cjk_questions_find_their_turn_first(cli: Memcli, question: str, expected: str) -> None:
    found = _found(cli, question)
    assert found and found[0] == expected, found


def test_english_search_is_unchanged(cli: Memcli) -> None:
    assert _found(cli, "glassblowing clay")[0] == TURNS[4][1]
    question = "What did Ana make at the glassblowing class?"
    assert fts_query(question) == '"ana" OR "make" OR "glassblowing" OR "class"'
    assert indexed_text(question) == question


def test_cjk_query_terms_are_character_pairs() -> None:
    assert fts_query("陶艺课") == '"陶 艺" OR "艺 课"'
    assert fts_query("iPhone手机") == '"iphone" OR "手 机"'
    assert indexed_text("上陶艺课.") == " 上  陶  艺  课 ."


def test_reindex_splits_cjk_rows_indexed_before(cli: Memcli) -> None:
    assert cli.db is not None
    with open_store(cli.db) as store, store.transaction():
        [(table,)] = store.conn.execute("SELECT 'fts_' || id FROM fts_spaces").fetchall()
        store.conn.execute(  # the row as an older memcli indexed it: one long token
            f"UPDATE {table} SET text = ? WHERE rowid = 1", [TURNS[0][1]]
        )
    assert TURNS[0][1] not in _found(cli, "陶艺课")
    [report] = cli.json("reindex")
    assert report["text_rows"] == 4  # the CJK turns; the English one is left alone
    assert _found(cli, "陶艺课")[0] == TURNS[0][1]
