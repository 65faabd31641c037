"""`memcli eval chats`: pairing files, checking questions, recall per type, CLI contract."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from memcli.errors import InvalidInput, NotFound
from memcli.eval import chats
from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer
from tests.paths import DATA

CHATS = DATA / "eval" / "chats"


@pytest.fixture
def pair_dir(tmp_path: Path) -> Path:
    """The garden chat, gzip-compressed, beside its questions."""
    home = tmp_path / "chats"
    home.mkdir()
    raw = (CHATS / "garden.jsonl").read_bytes()
    (home / "garden.jsonl.gz").write_bytes(gzip.compress(raw))
    shutil.copy(CHATS / "garden.questions.json", home)
    return home


def run(tmp_path: Path, server: FakeModelServer, *args: str):
    config = tmp_path / "memcli.yaml"
    config.write_text(
        f"embedding:\n  provider: ollama\n  model: fake-embed\n  url: {server.ollama_url}\n"
        "llm:\n  provider: none\n"
    )
    return Memcli(config=config)("eval", "chats", *args)


def test_find_pairs_from_a_directory_a_questions_file_or_a_conversation(pair_dir: Path) -> None:
    conv, questions = pair_dir / "garden.jsonl.gz", pair_dir / "garden.questions.json"
    assert chats.find_pairs([str(pair_dir)]) == [(conv, questions)]
    assert chats.find_pairs([str(questions)]) == [(conv, questions)]
    assert chats.find_pairs([str(conv), str(pair_dir)]) == [(conv, questions)], "deduplicated"


def test_directories_are_read_in_natural_order(tmp_path: Path) -> None:
    for stem in ("10", "2"):
        shutil.copy(CHATS / "garden.jsonl", tmp_path / f"{stem}.jsonl")
        shutil.copy(CHATS / "garden.questions.json", tmp_path / f"{stem}.questions.json")
    assert [c.name for c, _ in chats.find_pairs([str(tmp_path)])] == ["2.jsonl", "10.jsonl"]


def test_pairing_problems_say_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match=r"no \*\.questions\.json file"):
        chats.find_pairs([str(tmp_path)])
    shutil.copy(CHATS / "garden.questions.json", tmp_path)
    with pytest.raises(NotFound, match="no conversation file named garden"):
        chats.find_pairs([str(tmp_path)])
    lone = tmp_path / "lone.jsonl"
    lone.write_text('{"id": "1", "content": "hi"}\n')
    with pytest.raises(NotFound, match=r"no lone\.questions\.json next to it"):
        chats.find_pairs([str(lone)])
    with pytest.raises(NotFound, match="no such file or directory"):
        chats.find_pairs([str(tmp_path / "nope")])


def test_questions_are_checked_against_the_message_ids(tmp_path: Path) -> None:
    sessions = chats.message_sessions(CHATS / "garden.jsonl")
    assert sessions["m1"] == "s1" and sessions["m11"] == "s4"
    bad = tmp_path / "bad.questions.json"
    bad.write_text(
        json.dumps(
            [
                {"question": "ok?", "evidence": [1, "m2"]},
                {"question": "no evidence", "evidence": []},
                {"evidence": ["m1"]},
                {"question": "  ", "evidence": ["m1"]},  # nothing to ask: `ask` refuses it
            ]
        )
    )
    with pytest.raises(InvalidInput) as info:
        chats.load_questions(bad, sessions)
    assert info.value.problems == [
        f"{bad}: question 1: evidence id(s) 1 match no message id",
        f'{bad}: question 2: "evidence" must be a non-empty list of ids',
        f'{bad}: question 3: no "question" text',
        f'{bad}: question 4: no "question" text',
    ]


def test_question_ids_may_be_numbers_and_type_is_optional(tmp_path: Path) -> None:
    qfile = tmp_path / "q.questions.json"
    qfile.write_text(json.dumps({"questions": [{"question": "x?", "evidence": [7, 7]}]}))
    (loaded,) = chats.load_questions(qfile, {"7": "s"})
    assert (loaded["gold"], loaded["category"], loaded["answer"]) == (["7"], "all", "")


def test_a_conversation_without_ids_cannot_be_scored(tmp_path: Path) -> None:
    conv = tmp_path / "plain.jsonl"
    conv.write_text('{"content": "hello"}\n')
    with pytest.raises(InvalidInput, match="no message has an id"):
        chats.message_sessions(conv)


def test_eval_chats_reports_recall_per_type_with_timings(
    tmp_path: Path, fake_server: FakeModelServer, pair_dir: Path
) -> None:
    out = tmp_path / "report.json"
    result = run(
        tmp_path, fake_server, str(pair_dir), "--strategy", "lexical,hybrid", "--k", "1,5",
        "--json-out", str(out), "--consolidate",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "Chats evidence recall" in result.stdout and "by type" in result.stdout
    report = json.loads(out.read_text())
    assert report["grouping"] == "type" and report["consolidated"] is True
    lexical = report["results"]["lexical"]
    assert lexical["n"] == 4
    assert set(lexical["by_category"]) == {"information_lookup", "preference", "progress"}
    rows = {r["question"]: r for r in report["questions"]["lexical"]}
    sprout = rows["How many days did the seedlings take to sprout?"]
    assert sprout["retrieved"][0] == "m5" and sprout["recall"]["1"] == 1.0
    assert sprout["session_recall@10"] == 1.0, "sessions come from the messages"
    timing = report["timing"]
    assert set(timing["conversations"]) == {"garden"}
    assert timing["ingest_s"] > 0 and timing["consolidate_s"] > 0
    # Side by side: the same questions asked of the store before consolidate, per type.
    assert "what consolidation buys" in result.stdout and "ingest only" in result.stdout
    gain = report["consolidation"]
    assert gain["k"] == 5 and set(gain["strategies"]) == {"lexical", "hybrid"}
    for block in gain["strategies"].values():
        assert block["all"]["n"] == 4
        assert set(block["by_category"]) == set(lexical["by_category"])
        for entry in [block["all"], *block["by_category"].values()]:
            assert entry["after"] - entry["before"] == pytest.approx(entry["gain"])
            assert entry["low"] <= entry["gain"] <= entry["high"]
    assert gain["strategies"]["lexical"]["all"]["after"] == lexical["recall"]["5"]


def test_eval_chats_bad_input_is_a_clear_error(
    tmp_path: Path, fake_server: FakeModelServer, pair_dir: Path
) -> None:
    (pair_dir / "garden.questions.json").write_text('[{"question": "x", "evidence": ["zz"]}]')
    result = run(tmp_path, fake_server, str(pair_dir))
    assert result.exit_code == 4
    assert "memcli: error:" in result.stderr and "zz match no message id" in result.stderr
    assert result.stdout == ""
    typo = run(tmp_path, fake_server, str(pair_dir), "--strategy", "hybird")
    assert typo.exit_code == 2 and "did you mean 'hybrid'" in typo.stderr


def test_a_locomo_question_with_no_text_is_not_scored() -> None:
    from memcli.eval import locomo

    qa = {"category": 1, "evidence": ["D1:1"], "answer": "x"}
    sample = {"qa": [{**qa, "question": "Who?"}, {**qa, "question": " "}, qa]}
    assert [q["question"] for q in locomo.questions(sample)] == ["Who?"]
