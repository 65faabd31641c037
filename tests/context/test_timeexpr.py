"""Relative time expressions resolved from the session date, stored at ingest, shown in packing."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcli.context.pack import item_line
from memcli.models import Hit, Node
from memcli.timeexpr import annotate, time_refs
from tests.graph_helpers import CONVERSATION, memory, write_jsonl

SAID = "2023-05-08T13:56:00"  # a Monday


@pytest.mark.parametrize(
    ("text", "phrase", "date", "label"),
    [
        ("I went there yesterday!", "yesterday", "2023-05-07", "7 May 2023"),
        ("Last Friday was fun", "Last Friday", "2023-05-05", "5 May 2023"),
        ("this past Monday", "this past Monday", "2023-05-01", "1 May 2023"),
        ("see you next Friday", "next Friday", "2023-05-12", "12 May 2023"),
        ("this Sunday we rest", "this Sunday", "2023-05-14", "14 May 2023"),
        ("we move next month", "next month", "2023-06-01", "June 2023"),
        ("It started last month", "last month", "2023-04-01", "April 2023"),
        ("two weeks ago I ran", "two weeks ago", "2023-04-24", "the week of 24 April 2023"),
        ("3 days ago", "3 days ago", "2023-05-05", "5 May 2023"),
        ("a couple of months ago", "a couple of months ago", "2023-03-01", "March 2023"),
        ("a few days ago", "a few days ago", "2023-05-05", "around 5 May 2023"),
        ("last weekend was busy", "last weekend", "2023-05-06", "the weekend of 6 May 2023"),
        ("this weekend", "this weekend", "2023-05-13", "the weekend of 13 May 2023"),
        ("last week", "last week", "2023-05-01", "the week of 1 May 2023"),
        ("this morning I woke early", "this morning", "2023-05-08", "8 May 2023"),
        ("tonight we cook", "tonight", "2023-05-08", "8 May 2023"),
        ("last night", "last night", "2023-05-07", "7 May 2023"),
        ("in 3 days", "in 3 days", "2023-05-11", "11 May 2023"),
        ("in a week", "in a week", "2023-05-15", "the week of 15 May 2023"),
        ("tomorrow", "tomorrow", "2023-05-09", "9 May 2023"),
        ("the day before yesterday", "the day before yesterday", "2023-05-06", "6 May 2023"),
        ("last year", "last year", "2022-01-01", "2022"),
        ("five years ago", "five years ago", "2018-01-01", "2018"),
        ("yesterday's talk", "yesterday", "2023-05-07", "7 May 2023"),
    ],
)
def test_resolves_relative_expressions(text: str, phrase: str, date: str, label: str) -> None:
    refs = time_refs(text, SAID)
    assert refs == [{"text": phrase, "date": date, "grain": refs[0]["grain"], "label": label}]


@pytest.mark.parametrize(
    "text",
    [
        "the next step is hard",
        "last but not least",
        "weekends are fun",
        "back in 2022 we met",
        "the last time I saw her",
        "on Saturday we hiked",  # tense decides past or future: not guessed
        "a daily routine",
        "the yesterdays of old",
    ],
)
def test_leaves_other_phrases_alone(text: str) -> None:
    assert time_refs(text, SAID) == []


def test_month_arithmetic_clamps_and_crosses_years() -> None:
    assert time_refs("a month ago", "2023-03-31T10:00:00")[0]["date"] == "2023-02-01"
    assert time_refs("next month", "2023-12-15")[0]["label"] == "January 2024"


def test_several_expressions_in_order_and_none_without_a_date() -> None:
    refs = time_refs("Yesterday was rainy, but tomorrow and next week look fine", SAID)
    assert [r["text"] for r in refs] == ["Yesterday", "tomorrow", "next week"]
    assert time_refs("yesterday", None) == []
    assert time_refs("yesterday", "not a date") == []


def test_annotation_and_packed_line() -> None:
    refs = time_refs("I went yesterday", SAID)
    assert annotate(refs) == "[yesterday = 7 May 2023]"
    node = Node(3, "episode", "default", "I went yesterday", speaker="Ana")
    node.props["time_refs"] = refs
    assert item_line(Hit(node, 1.0)) == "[ep3] Ana: I went yesterday [yesterday = 7 May 2023]"


def test_ingest_stores_resolved_dates_on_episodes(tmp_path: Path) -> None:
    conv = write_jsonl(tmp_path / "c.jsonl", CONVERSATION)
    with memory(tmp_path / "m.db", None) as mem:
        mem.ingest([str(conv)])
        nodes = {n.ref: n for n in mem.store.iter_nodes("default", "episode")}
        context = mem.ask("marathon in Lisbon", context_only=True, strategy="lexical").context
    assert nodes["a2"].props["time_refs"][0]["date"] == "2023-05-07"
    assert nodes["b1"].props["time_refs"][0]["label"] == "July 2023"
    assert "time_refs" not in nodes["a1"].props
    assert "[next month = July 2023]" in context
