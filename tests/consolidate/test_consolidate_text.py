"""The rule-based helpers of consolidation: label normaliser, key phrases, dates, boundaries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memcli.consolidate.buffer import Buffer, ended_sessions, pending_buffers, take_window
from memcli.consolidate.concept_index import ConceptIndex
from memcli.consolidate.normalize import near_duplicate, singular
from memcli.consolidate.phrases import Corpus, is_generic, key_phrases, name_tokens, phrases
from memcli.consolidate.segment import choose_boundaries, depth_scores, enforce_min_turns
from memcli.dates import partial_date as normalize_fact_date
from memcli.models import Node
from memcli.store import open_store
from memcli.timeexpr import resolve_relative
from tests.consolidate_helpers import canonical_label

# -- concept labels ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plural", "single"),
    [
        ("classes", "class"),
        ("hobbies", "hobby"),
        ("movies", "movie"),
        ("boxes", "box"),
        ("beaches", "beach"),
        ("headaches", "headache"),
        ("potatoes", "potato"),
        ("shoes", "shoe"),
        ("children", "child"),
        ("photos", "photo"),
        ("glasses", "glasses"),
        ("analysis", "analysis"),
        ("news", "news"),
        ("bus", "bus"),
    ],
)
def test_singular(plural: str, single: str) -> None:
    assert singular(plural) == single


@pytest.mark.parametrize(
    ("a", "b", "label"),
    [
        ("chess_clubs", "chess club", "chess_club"),
        ("Supportive Relationships", "supportive_relationship", "supportive_relationship"),
        ("book-recommendations", "book_recommendation", "book_recommendation"),
        ("colour_palette", "color palettes", "color_palette"),
        ("community organisation", "community_organization", "community_organization"),
        ("the_canoe_trips", "canoe trip", "canoe_trip"),
        ("Favourite Movies", "favorite_movie", "favorite_movie"),
        ("Alexandra's allotment plans", "alexandra_allotment_plan", "alexandra_allotment_plan"),
    ],
)
def test_plural_and_spelling_twins_share_one_label(a: str, b: str, label: str) -> None:
    # Both spellings land on one snake_case label: singular, American, no article, no 's.
    assert canonical_label(a) == canonical_label(b) == label


def test_label_shape() -> None:
    assert canonical_label("  Marathon   Training! ") == "marathon_training"
    assert canonical_label("the") == ""


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz _-'", max_size=40))
def test_canonical_label_is_idempotent(text: str) -> None:
    once = canonical_label(text)
    assert canonical_label(once) == once


EDGE_WORDS = set("a an the my our your his her their its this that some".split())


@given(st.text(max_size=40))
def test_canonical_label_is_lower_snake_case_without_edge_articles(text: str) -> None:
    label = canonical_label(text)
    assert label == "" or re.fullmatch(r"[a-z0-9]+(?:_[a-z0-9]+)*", label), label
    words = label.split("_") if label else []
    assert not words or (words[0] not in EDGE_WORDS and words[-1] not in EDGE_WORDS)
    assert canonical_label(label) == label


def test_near_duplicates() -> None:
    assert near_duplicate("class_chess", "chess_class")
    assert near_duplicate("meditation_retreat", "meditaton_retreat")
    assert not near_duplicate("chess_class", "chess_glass")  # short word: a real difference
    assert not near_duplicate("dog_training", "cat_training")
    assert not near_duplicate("sailing", "sailing_class")


# -- key phrases -----------------------------------------------------------------------------


def test_phrases_skip_names_stopwords_and_split_runs() -> None:
    names = name_tokens(["Alexandra", "Oskar"])
    found = phrases("Alex, I signed up for chess classes with Oskar yesterday!", names)
    assert ("chess", "class") in found
    assert ("chess",) in found
    assert not any("alex" in p or "oskar" in p or "yesterday" in p for p in found)
    assert all(len(p) <= 3 for p in found)


def test_stop_words_and_past_participles_are_not_topics() -> None:
    assert is_generic(("really", "just"))
    assert is_generic(("felt", "relieved"))
    assert not is_generic(("chess",))
    assert not is_generic(("error", "handling"))  # an -ing head can be a topic
    assert not is_generic(("chess", "club"))
    assert is_generic(("chess", "club"), frozenset({("chess", "club")}))


def _spread_texts(stretches: int) -> list[str]:
    """`stretches` stretches of turns: "weather" in every one, "sourdough" in one only."""
    texts = []
    for n in range(stretches):
        texts += [f"The weather again, day {n}."] + [f"Filler turn {i}." for i in range(19)]
    texts[5] = "My sourdough starter is bubbling."
    texts[6] = "The sourdough starter needs flour."
    return texts


def test_phrases_said_all_through_the_space_are_generic() -> None:
    corpus = _corpus(_spread_texts(6))
    assert ("weather",) in corpus.generic
    assert corpus.is_generic(("weather",))
    assert not corpus.is_generic(("sourdough", "starter"))
    best = key_phrases(["The weather and my sourdough starter."], corpus, 3)
    assert ("weather",) not in [p for p, _ in best]
    assert ("sourdough", "starter") in [p for p, _ in best]


def test_a_short_space_has_no_generic_phrases() -> None:
    assert _corpus(_spread_texts(3)).generic == frozenset()


def _corpus(texts: list[str]) -> Corpus:
    return Corpus.build(enumerate(texts), name_tokens(["Ana"]))


def test_key_phrases_prefer_specific_recurring_phrases() -> None:
    texts = [
        "Ana went to the chess club again.",
        "The chess club played a match.",
        "We talked about the weather and the weather.",
        "The weather is nice today.",
        "The weather was cold.",
        "I like the weather.",
    ]
    corpus = _corpus(texts)
    best = key_phrases(texts[:2], corpus, 1, min_df=2, min_turns=2)
    assert best[0][0] == ("chess", "club")
    # "weather" occurs in 4 of 6 turns: above a cap of 3 it is too common to be a concept.
    capped = key_phrases(texts[2:], corpus, 3, min_df=2, max_df=3, min_turns=2)
    assert ("weather",) not in [p for p, _ in capped]


def test_single_words_must_recur_within_the_group() -> None:
    texts = ["I bought a kayak.", "Lunch was fine.", "A kayak again.", "More kayak talk."]
    corpus = _corpus(texts)
    assert key_phrases(texts[:2], corpus, 3, min_df=2, min_turns=2) == []
    assert key_phrases(texts[2:], corpus, 3, min_df=2, min_turns=2)[0][0] == ("kayak",)


# -- dates ------------------------------------------------------------------------------------


def test_relative_dates_resolve_against_the_turn_date() -> None:
    said = "2023-05-08T13:56:00"  # a Monday
    found = dict(
        resolve_relative(
            "Yesterday I ran; last week I swam, two months ago I moved. Last Saturday was fun,"
            " next month we fly, 3 days ago I slept and last year I graduated.",
            said,
        )
    )
    assert found["yesterday"] == "2023-05-07"
    assert found["last week"] == "week of 2023-05-01"
    assert found["two months ago"] == "2023-03"
    assert found["last saturday"] == "2023-05-06"
    assert found["next month"] == "2023-06"
    assert found["3 days ago"] == "2023-05-05"
    assert found["last year"] == "2022"
    assert resolve_relative("yesterday", None) == []
    vague = dict(resolve_relative("We met a few days ago; I fly in 2 weeks.", said))
    assert vague == {"a few days ago": "around 2023-05-05", "in 2 weeks": "week of 2023-05-22"}


def test_fact_dates_are_checked() -> None:
    assert normalize_fact_date("2023-05-07") == "2023-05-07"
    assert normalize_fact_date(" 2023-05 ") == "2023-05"
    assert normalize_fact_date("2023") == "2023"
    assert normalize_fact_date("2023-13-01") is None
    assert normalize_fact_date("last week") is None
    assert normalize_fact_date(None) is None


# -- boundaries ---------------------------------------------------------------------------------


def test_depth_scores_find_the_dip() -> None:
    sims = [0.9, 0.85, 0.3, 0.8, 0.9, 0.88, 0.87]
    depths = depth_scores(sims)
    assert max(range(len(depths)), key=depths.__getitem__) == 2
    assert depths[2] == pytest.approx((0.9 - 0.3) + (0.9 - 0.3))


def test_choose_boundaries_respects_depth_and_minimum_length() -> None:
    depths = [0.0, 0.1, 0.9, 0.0, 0.05, 0.7, 0.6, 0.0, 0.0]  # 10 turns
    assert choose_boundaries(depths, 0.2, 3) == [3, 6]
    assert choose_boundaries(depths, 0.95, 3) == []
    # gap 6 (turn 7) is too close to turn 6, and turn 9 would leave a one-turn tail.
    assert enforce_min_turns([3, 6, 7, 9], 10, 3) == [3, 6]


# -- buffers ------------------------------------------------------------------------------------


def _ep(i: int, session: str, ts: str | None, text: str = "hello there") -> Node:
    return Node(id=i, kind="episode", space="s", text=text, session=session, seq=i, timestamp=ts)


def test_a_session_ends_when_a_later_one_starts() -> None:
    eps = [_ep(1, "a", "2023-01-01"), _ep(2, "a", "2023-01-01"), _ep(3, "b", "2023-02-01")]
    assert ended_sessions(eps) == {"a"}
    assert ended_sessions(eps[:2]) == set()
    undated = [_ep(1, "a", None), _ep(2, "b", None), _ep(3, "b", None)]
    assert ended_sessions(undated) == {"a"}


def test_pending_buffers_close_on_session_end_or_flush() -> None:
    eps = [_ep(1, "a", "2023-01-01"), _ep(2, "a", "2023-01-01"), _ep(3, "b", "2023-02-01")]
    buffers = pending_buffers(eps, {1, 2, 3}, flush=False)
    assert [(b.session, b.closed, len(b.episodes)) for b in buffers] == [
        ("a", True, 2),
        ("b", False, 1),
    ]
    assert all(b.closed for b in pending_buffers(eps, {1, 2, 3}, flush=True))
    assert isinstance(buffers[0], Buffer) and buffers[0].to_dict()["pending"] == 2


def test_take_window_stops_at_the_token_budget() -> None:
    eps = [_ep(i, "a", None, "one two three four") for i in range(1, 6)]
    assert [e.id for e in take_window(eps, 9)] == [1, 2]
    assert [e.id for e in take_window(eps, 1)] == [1]  # never empty
    assert len(take_window(eps, 10_000)) == 5


def test_concept_labels_refuse_the_space_s_generic_phrases(tmp_path: Path) -> None:
    with open_store(tmp_path / "m.db") as store:
        index = ConceptIndex(store, "default", frozenset({"ana"}), frozenset({("weather",)}))
        assert index.label("Weather") is None
        assert index.label("Ana") is None
        assert index.label("sourdough starters") == "sourdough_starter"
