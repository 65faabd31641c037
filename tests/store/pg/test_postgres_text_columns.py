"""The Postgres store's per-column BM25 and speaker lookup answer as the SQLite store's:
the default strategy's first pass weighs the columns apart, and a question's names are
looked up among the speakers (memcli.retrieval.firstpass, memcli.retrieval.people)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memcli.store import open_store

pytestmark = pytest.mark.postgres

# Words the Porter (FTS5) and Snowball (Postgres) stemmers treat alike. The turns of one
# session, so each has the opening words of the two before it as its context.
TURNS = [
    ("Ana Lopez", "we walked the dog along the river and the dog swam"),
    ("Ben", "the river was cold in March"),
    ("Ana Lopez", "my cello teacher lives by the river"),
    ("Ben", "cello lessons on Tuesday, then a walk with the dog"),
    ("Ana Lopez", "nothing to say about that"),
    ("Ben", "Ana said the dog likes the river more than the cello"),
    ("Ana Lopez", "thanks Ben"),
]
FACTS = ["Ana plays the cello", "Ben walks the dog by the river"]
QUERIES = ["river dog", "cello lessons", "Ana cello", "Ben walk", "March", "Lopez teacher"]


def _fill(store: Any) -> None:
    turns = [
        {"text": text, "speaker": who, "session": "s1", "seq": i, "key": f"k{i}"}
        for i, (who, text) in enumerate(TURNS)
    ]
    with store.transaction():
        store.insert_nodes("default", "episode", turns)
        store.insert_nodes("default", "fact", [{"text": t, "key": t} for t in FACTS])
        store.insert_nodes("other", "episode", [{"text": "Cara by the river", "speaker": "Cara"}])


@pytest.fixture
def both(pg_url: str, tmp_path: Path) -> Any:
    """The same memories in a SQLite file and a Postgres schema."""
    sqlite, pg = open_store(tmp_path / "m.db"), open_store(pg_url)
    _fill(sqlite)
    _fill(pg)
    yield sqlite, pg
    sqlite.close()
    pg.close()


@pytest.mark.parametrize("kinds", [None, ["episode"], ["fact"]])
def test_each_column_scores_as_fts5s_bm25_of_that_column(both: Any, kinds: Any) -> None:
    sqlite, pg = both
    found = 0
    for query in QUERIES:
        want = sqlite.text_search_columns("default", query, 20, kinds)
        got = pg.text_search_columns("default", query, 20, kinds)
        found += bool(want)
        assert [r[0] for r in got] == [r[0] for r in want], query
        for a, b in zip(got, want, strict=True):
            assert a[1:] == pytest.approx(b[1:], rel=1e-6, abs=1e-9), (query, a, b)
        # The same rows and totals as the plain search, which ranks by the total.
        plain = pg.text_search("default", query, 20, kinds)
        assert [(r[0], pytest.approx(r[1])) for r in got] == plain, query
    assert found >= 3  # not a comparison of empty lists


def test_the_columns_are_apart_speaker_and_context_included(both: Any) -> None:
    _, pg = both
    rows = {r[0]: r[1:] for r in pg.text_search_columns("default", "Lopez", 20)}
    assert rows and all(text == 0 and speaker > 0 for _, text, speaker, _ in rows.values())
    march = {r[0]: r[1:] for r in pg.text_search_columns("default", "March", 20)}
    said, *after = sorted(march)  # "March" in one turn, and in the next two turns' context
    assert march[said][1] > 0 and march[said][3] == 0
    assert len(after) == 2 and all(march[i][1] == 0 and march[i][3] > 0 for i in after)
    assert pg.text_search_columns("default", "the", 20) != []  # only stop words: kept
    assert pg.text_search_columns("default", "river", 0) == []
    assert pg.text_search_columns("nowhere", "river", 5) == []


def test_a_speaker_is_found_by_any_word_of_their_name_in_both_backends(both: Any) -> None:
    for store in both:
        assert store.speaker_named("default", "lopez") == "Ana Lopez"
        assert store.speaker_named("default", "ANA") == "Ana Lopez"
        assert store.speaker_named("default", "Ben") == "Ben"
        assert store.speaker_named("default", "cello") is None  # in a text, not a speaker
        assert store.speaker_named("default", "Cara") is None  # a speaker of another space
        assert store.speaker_named("other", "Cara") == "Cara"
        assert store.speaker_named("default", '"') is None
        assert store.speaker_named("default", "") is None
        assert store.speaker_named("nowhere", "Ana") is None


def test_a_name_of_two_words_is_a_phrase_in_the_speaker_only(both: Any) -> None:
    for store in both:
        assert store.speaker_named("default", "Ana Lopez") == "Ana Lopez"
        assert store.speaker_named("default", "Lopez Ana") is None  # not in that order
        assert store.speaker_named("default", "Ana said") is None  # "said" is in a text


def test_of_two_speakers_sharing_a_word_the_first_to_speak_is_named(both: Any) -> None:
    for store in both:
        with store.transaction():
            later = store.insert_node("default", "episode", "hello", speaker="Cara Lopez")
            first = [
                n.id for n in store.iter_nodes("default", "episode") if n.speaker == "Ana Lopez"
            ]
            # Rewritten rows move to the end of Postgres' table: the first row it comes to
            # is then the later speaker's, not the one with the lowest id.
            for node_id in first:
                store.update_node(node_id, text="rewritten")
        assert later > max(first)
        assert store.speaker_named("default", "Lopez") == "Ana Lopez"
        assert store.speaker_named("default", "Cara") == "Cara Lopez"


def test_a_name_of_two_words_after_a_very_long_text_is_still_a_phrase(both: Any) -> None:
    # Postgres caps a tsvector's positions (16,383): after a text that long, the speaker
    # part's words would all share the last position. Names are matched on their own.
    for store in both:
        with store.transaction():
            store.insert_node("default", "episode", "word " * 17_000, speaker="Zed Quill")
        assert store.speaker_named("default", "Zed Quill") == "Zed Quill"
        assert store.speaker_named("default", "Quill Zed") is None
