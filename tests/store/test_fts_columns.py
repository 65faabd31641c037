"""The full-text index's per-column BM25 and its speaker lookup (memcli.store.sqlite.fts)."""

from __future__ import annotations

from pathlib import Path

from tests.graph_helpers import Builder


def test_each_column_scores_apart_and_rows_rank_as_the_weighted_search(tmp_path: Path) -> None:
    b = Builder(tmp_path / "m.db", vectors=False)
    said = b.node("episode", "The kiln is hot.", speaker="Ana", session="s", seq=0)
    after = b.node("episode", "Great, well done.", speaker="Ana Lopez", session="s", seq=1)
    other = b.node("episode", "Rain all day here.", speaker="Ben", session="s", seq=2)
    b.chain([said, after, other])
    store = b.store
    rows = {r[0]: r[1:] for r in store.text_search_columns("default", "kiln ana", 10)}
    ranked = [i for i, _ in store.text_search("default", "kiln ana", 10)]
    assert list(rows) == ranked  # the same rows in the same order
    _, text, speaker, context = rows[said]
    assert text > 0 and speaker > 0 and context == 0
    assert rows[after][1] == 0 and rows[after][2] > 0  # "ana" in its speaker's name
    assert rows[other][1:3] == (0.0, 0.0) and rows[other][3] > 0  # "kiln" in its context
    b.close()


def test_a_speaker_is_found_by_any_word_of_their_name(tmp_path: Path) -> None:
    b = Builder(tmp_path / "m.db", vectors=False)
    assert b.store.speaker_named("default", "Ana") is None  # no full-text table yet
    b.node("episode", "Hello there.", speaker="Ana Lopez", session="s", seq=0)
    b.node("episode", "Hi! Lopez is a name I know.", speaker="Ben", session="s", seq=1)
    assert b.store.speaker_named("default", "lopez") == "Ana Lopez"
    assert b.store.speaker_named("default", "ANA") == "Ana Lopez"
    assert b.store.speaker_named("default", "Hello") is None  # in a text, not a speaker
    assert b.store.speaker_named("default", '"') is None
    assert b.store.speaker_named("other", "Ana") is None
    b.close()
