"""The speakers a question names (memcli.retrieval.people): by their name, or by what the
other speaker calls them; their names leave the searched text and become the role cue."""

from __future__ import annotations

from pathlib import Path

from memcli.ops.ask import search_context
from memcli.retrieval.people import People, PeopleParams, _opening, _vocative, named_speakers
from tests.graph_helpers import Builder, memory

# Wren writes as "wren_22"; Jory calls her "Birdie" at the start and end of turns.
TURNS = [
    ("jory", "Hi Birdie! How was the glassblowing fair?"),
    ("wren_22", "Busy! I sold four bowls and a teapot."),
    ("jory", "That is great Birdie."),
    ("wren_22", "The teapot went to a collector from Alderbrook."),
    ("jory", "Birdie, will you go again next year?"),
    ("wren_22", "Yes, and I will bring the blue glaze set."),
    ("jory", "My cousin Tamsin lives in Alderbrook."),
    ("wren_22", "Does Tamsin collect glassblowing too?"),
    ("jory", "Thanks Birdie!"),
    ("wren_22", "Any time."),
    ("jory", "I want a teapot like that."),
]


def store(tmp_path: Path) -> Path:
    b = Builder(tmp_path / "m.db", vectors=False)
    ids = [
        b.node("episode", text, speaker=speaker, session="s", seq=n, ref=f"t{n}")
        for n, (speaker, text) in enumerate(TURNS)
    ]
    b.chain(ids)
    b.close()
    return tmp_path / "m.db"


def test_a_speakers_name_in_the_question_becomes_the_role_and_leaves_the_text(
    tmp_path: Path,
) -> None:
    with memory(store(tmp_path), None) as mem:
        people = named_speakers(search_context(mem), "What did Jory's cousin do?")
    assert people.speakers == {"jory"}
    assert people.query == "What did cousin do?"


def test_what_a_speaker_is_called_names_them(tmp_path: Path) -> None:
    with memory(store(tmp_path), None) as mem:
        ctx = search_context(mem)
        called = named_speakers(ctx, "What did Birdie sell at the fair?")
        third = named_speakers(ctx, "Where does Tamsin live?")  # talked about, not called
        place = named_speakers(ctx, "Who lives in Alderbrook?")
    assert called.speakers == {"wren_22"} and "Birdie" not in called.query
    assert third.speakers == set() and third.query == "Where does Tamsin live?"
    assert place.speakers == set()


def test_a_question_of_names_alone_keeps_its_words(tmp_path: Path) -> None:
    with memory(store(tmp_path), None) as mem:
        people = named_speakers(search_context(mem), "Jory and Birdie?")
    assert people.speakers == {"jory", "wren_22"} and people.query == "Jory and Birdie?"


def test_each_way_of_naming_someone_is_a_switch_and_its_counts_are_parameters(
    tmp_path: Path,
) -> None:
    asked = "What did Birdie sell at the fair?"
    with memory(store(tmp_path), None) as mem:
        ctx = search_context(mem)
        no_aliases = named_speakers(ctx, asked, PeopleParams(people_aliases=False))
        stricter = named_speakers(ctx, asked, PeopleParams(alias_vocatives=5))
        no_names = named_speakers(
            ctx, "What did Jory's cousin do?", PeopleParams(people_names=False)
        )
    assert no_aliases.speakers == set() and no_aliases.query == asked
    assert stricter.speakers == set(), "four vocatives are too few for five"
    assert no_names == People(frozenset(), "What did Jory's cousin do?")


def test_the_role_cue_ranks_the_called_speakers_turns_first(tmp_path: Path) -> None:
    with memory(store(tmp_path), None) as mem:
        hits = mem.recall("What did Birdie say about the teapot?", k=3).hits
    # Both say "teapot", and Jory's turns say "Birdie": read as Wren, the name takes her
    # turns first.
    assert [h.node.speaker for h in hits[:2]] == ["wren_22", "wren_22"]


def test_vocative_positions() -> None:
    assert _opening("Hi Birdie! How are you?", "Birdie")
    assert _opening("Birdie, look at this", "Birdie")
    assert not _opening("I met Birdie at the fair", "Birdie")
    assert _vocative("Thank you so much Birdie!", "Birdie")
    assert not _vocative("Birdie said she would come", "Birdie")
