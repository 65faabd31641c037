"""Related words: the words of turns, counted and embedded, and searched beside a question's."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from memcli.config import RetrievalConfig
from memcli.memory import Memory
from memcli.retrieval import SearchContext
from memcli.retrieval.firstpass import FirstPassParams, first_pass
from memcli.retrieval.related import inflection, question_words, related_words
from tests.cli_runner import Memcli
from tests.consolidate_helpers import config, config_file
from tests.fakeserver import FakeModelServer

TURNS = [
    ("party", "user", "We booked a videographer for the launch party in June."),
    ("party", "assistant", "Good choice. Do you also need a florist?"),
    ("garden", "user", "The tomatoes on the balcony are ripe."),
    ("garden", "assistant", "Pick them before the frost."),
]


def _chat(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    rows = [{"session": s, "role": r, "content": c} for s, r, c in TURNS]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _consolidated(tmp_path: Path, fake_server: FakeModelServer, *more: str) -> Memcli:
    """The CLI over a store holding the chat (and `more` texts added to its second session),
    consolidated without an LLM."""
    cli = Memcli(config=config_file(tmp_path, fake_server, llm=False))
    cli("ingest", str(_chat(tmp_path)))
    for text in more:
        cli("add", text, "--session", "garden")
    cli("consolidate", "--no-llm")
    return cli


def _words(mem: Memory) -> dict[str, tuple[int, bool]]:
    rows = mem.store.conn.execute("SELECT word, turns, vector IS NOT NULL FROM words")
    return {w: (n, bool(v)) for w, n, v in rows}


def test_turns_count_their_words_and_consolidation_embeds_them_once(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cfg = config_file(tmp_path, fake_server, llm=False)
    cli = Memcli(config=cfg)
    assert cli("ingest", str(_chat(tmp_path))).exit_code == 0
    dry = cli("--json", "consolidate", "--dry-run")
    # booked videographer launch party june / good choice need florist / tomatoes balcony
    # ripe / pick frost: three letters or more, no stop word, no "We", "a", "the", "also".
    words = 14
    assert json.loads(dry.stdout)["stages"]["words"]["pending"] == words
    health = json.loads(cli("--json", "inspect").stdout)["consolidation"]
    assert health["pending"]["words"] == words
    first = json.loads(cli("--json", "consolidate", "--no-llm").stdout)["stages"]["words"]
    assert (first["status"], first["words"], first["pending"]) == ("done", words, 0)
    again = json.loads(cli("--json", "consolidate", "--no-llm").stdout)["stages"]["words"]
    assert (again.get("words", 0), again["pending"]) == (0, 0)
    health = json.loads(cli("--json", "inspect").stdout)["consolidation"]
    assert health["pending"]["words"] == 0 and health["last_runs"]["words"]["status"] == "done"
    with Memory(config(tmp_path, fake_server, llm=False)) as mem:
        counted = _words(mem)
    assert len(counted) == words and all(embedded for _, embedded in counted.values())
    assert counted["videographer"] == (1, True) and "the" not in counted and "in" not in counted


def test_a_forgotten_turn_leaves_none_of_its_words(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _consolidated(tmp_path, fake_server, "The balcony needs a new railing.")
    with Memory(config(tmp_path, fake_server, llm=False)) as mem:
        assert _words(mem)["balcony"] == (2, True)
    assert cli("prune", "--session", "garden", "--yes").exit_code == 0
    with Memory(config(tmp_path, fake_server, llm=False)) as mem:
        left = _words(mem)
    assert not {"balcony", "tomatoes", "frost", "railing"} & set(left)
    assert left["videographer"] == (1, True) and left["florist"] == (1, True)


def test_a_question_reaches_a_turn_through_a_related_word(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cfg = config(tmp_path, fake_server, llm=False)
    with Memory(cfg) as mem:
        mem.ingest([str(_chat(tmp_path))])
        mem.consolidate(flush=True, no_llm=True)
        turn = next(n.id for n in mem.store.iter_nodes("default", "episode") if "video" in n.text)
        # The fake embedder's vectors share trigrams: "photographer" and "videographer"
        # have cosine 0.43, above this threshold.
        on = FirstPassParams(related_similarity=0.4)
        ctx = SearchContext(mem.store, "default", mem.load_embedder(), RetrievalConfig())
        question = "Which photographer was it?"
        assert related_words(ctx, question, 3, 0.4) == ["videographer"]
        assert turn in first_pass(ctx, question, [(None, 5)], on).related
        off = dataclasses.replace(on, related_words=0)
        assert related_words(ctx, question, 0, 0.4) == []
        assert turn not in first_pass(ctx, question, [(None, 5)], off).related
        # A store whose words have no vectors (consolidation has not run since) adds none.
        with mem.store.transaction():
            mem.store.forget_word_vectors()
        assert related_words(ctx, question, 3, 0.4) == []


def test_question_words_leave_out_names_stop_words_and_short_words() -> None:
    assert question_words("What does Tomasz do with his cousins on Sundays?") == ["cousins"]
    assert question_words("Tomasz's cousins: what do they like?") == ["tomasz", "cousins", "like"]
    assert inflection("running", "runner") and inflection("cousins", "cousin")
    assert not inflection("doctor", "physician") and not inflection("photographer", "videographer")


def test_reindex_embeds_the_words_again_and_import_counts_them(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _consolidated(tmp_path, fake_server)
    with Memory(config(tmp_path, fake_server, llm=False)) as mem, mem.store.transaction():
        mem.store.put_word_vectors("default", [("florist", [0.0] * 64)])  # a stale vector
    assert json.loads(cli("--json", "reindex").stdout)["words"] == 14
    with Memory(config(tmp_path, fake_server, llm=False)) as mem:
        assert mem.store.unembedded_words("default") == []
        assert mem.store.word_vectors("default", ["florist"])["florist"].any()
    assert cli("export", "-o", str(tmp_path / "backup.jsonl")).exit_code == 0
    other = Memcli(config=config_file(tmp_path / "other", fake_server, llm=False))
    assert other("import", str(tmp_path / "backup.jsonl")).exit_code == 0
    with Memory(config(tmp_path / "other", fake_server, llm=False)) as mem:
        assert len(_words(mem)) == 14 and _words(mem)["videographer"] == (1, True)


def test_an_exact_copy_carries_the_word_vectors_and_bad_word_records_are_refused(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _consolidated(tmp_path, fake_server)
    dump = tmp_path / "copy.jsonl"
    assert cli("export", "--vectors", "-o", str(dump)).exit_code == 0
    records = [json.loads(line) for line in dump.read_text().splitlines()]
    assert records[0]["format"] == 3
    assert sorted(r["word"] for r in records if r["record"] == "word")[:2] == ["balcony", "booked"]
    calls = len(fake_server.requests_to("/api/embed"))
    other = Memcli(config=config_file(tmp_path / "other", fake_server, llm=False))
    assert other("import", str(dump)).exit_code == 0
    assert len(fake_server.requests_to("/api/embed")) == calls  # copied, not embedded
    with Memory(config(tmp_path / "other", fake_server, llm=False)) as mem:
        assert all(embedded for _, embedded in _words(mem).values())
    # A word record whose vector does not fit, and a format-1 file (no word records).
    bad = [r if r["record"] != "word" or r["word"] != "frost" else {**r, "vector": "AAAA"}
           for r in records]  # fmt: skip
    (tmp_path / "bad.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bad))
    refused = Memcli(config=config_file(tmp_path / "third", fake_server, llm=False))(
        "import", str(tmp_path / "bad.jsonl")
    )
    assert refused.exit_code != 0 and "word 'frost': its vector is not 64 floats" in refused.stderr
    old = [{**r, "format": 1} if r["record"] == "memcli-export" else r
           for r in records if r["record"] != "word"]  # fmt: skip
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    fourth = Memcli(config=config_file(tmp_path / "fourth", fake_server, llm=False))
    assert fourth("import", str(tmp_path / "old.jsonl")).exit_code == 0
    with Memory(config(tmp_path / "fourth", fake_server, llm=False)) as mem:
        assert len(_words(mem)) == 14 and all(e for _, e in _words(mem).values())
