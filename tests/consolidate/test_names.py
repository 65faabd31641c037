"""Multi-word names with lower-case particles stay whole (issue 37, item 7); the particles
join nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcli.consolidate.names import CaseStats, mentions
from tests.consolidate_helpers import opened
from tests.fakeserver import FakeModelServer


def _names(text: str, stats: CaseStats | None = None) -> list[str]:
    return [m.surface for m in mentions(text, stats)]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("We had dinner at Casa do Largo last night.", "Casa do Largo"),
        ("She loves Leonardo da Vinci and his notebooks.", "Leonardo da Vinci"),
        ("I played some Ludwig van Beethoven for her.", "Ludwig van Beethoven"),
        ("The painting by Vincent van Gogh was moving.", "Vincent van Gogh"),
        ("We flew to Rio de Janeiro in May.", "Rio de Janeiro"),
        ("My account is with the Bank of the West now.", "Bank of the West"),
        ("We finally watched the Lord of the Rings.", "Lord of the Rings"),
        ("The talk quoted Bashar al-Assad twice.", "Bashar al-Assad"),
        ("He met Alexander von Humboldt's biographer.", "Alexander von Humboldt"),
    ],
)
def test_a_name_with_particles_is_one_name(text: str, name: str) -> None:
    found = _names(text)
    assert name in found, found
    assert not set(name.split()) & set(found), found  # not also in pieces


def test_particles_join_only_between_name_words() -> None:
    assert _names("I told Ana of the plan.") == ["Ana"]
    assert _names("We drove Ana to the station and Jon to the airport.") == ["Ana", "Jon"]
    assert _names("and then we saw Ana of") == ["Ana"]  # a particle at the end
    assert _names("Talk to Ana the day after.") == ["Ana"]  # "the" alone joins nothing
    assert _names("Pasta al dente for Ana.") == ["Ana"]


def test_no_llm_consolidation_keeps_the_name_whole(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        '{"id": "1", "session": "s1", "role": "user", "content": "We ate at Casa do Largo '
        'yesterday; the grilled fish at Casa do Largo was perfect."}\n'
    )
    mem = opened(tmp_path, fake_server, llm=False)
    mem.ingest([str(chat)])
    mem.consolidate(flush=True)
    entities = {e.text for e in mem.store.iter_nodes(mem.space, "entity")}
    assert "Casa do Largo" in entities and not {"Casa", "Largo"} & entities
