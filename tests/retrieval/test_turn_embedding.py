"""A turn is embedded with the opening words of the turn before it: by ingest, by reindex
and by import alike, so a store's vectors do not depend on how it was made."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memcli.models import TURN_CONTEXT_WORDS, embedding_text, turn_embedding_text
from memcli.store import open_store
from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer, fake_embedding

TURNS = [
    ("user", "Did the garage call back about the van?"),
    ("assistant", "Yes, they said the battery is replaced and it starts first time now."),
    ("user", "Great, I will pick it up on Friday."),
]


def _chat(path: Path, session: str, turns: list[tuple[str, str]], first: int = 1) -> Path:
    lines = [
        {"id": f"m{first + n}", "session": session, "role": role, "content": text}
        for n, (role, text) in enumerate(turns)
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _config(path: Path, db: Path, url: str) -> Path:
    path.write_text(
        f"db: {db}\nembedding:\n  provider: ollama\n  model: fake-embed\n  url: {url}\n"
        "  max_retries: 0\n",
        encoding="utf-8",
    )
    return path


def _vectors(db: Path) -> dict[str, np.ndarray]:
    """Each turn's stored vector, by its text."""
    with open_store(db) as store:
        nodes = store.nodes_by_ids(list(range(1, 20)))
        vectors = store.get_vectors(list(nodes))
    return {nodes[i].text: np.asarray(v) for i, v in vectors.items()}


def _expected(text: str, speaker: str, before: tuple[str, str] | None) -> np.ndarray:
    return np.asarray(fake_embedding(turn_embedding_text(text, speaker, before)))


def test_the_turn_comes_first_and_the_turn_before_is_cut_to_its_opening_words() -> None:
    long = " ".join(f"w{n}" for n in range(100))
    made = turn_embedding_text("It starts now.", "Ana", (long, "Ben"))
    own, context = made.split("\n")
    assert own == embedding_text("It starts now.", "Ana") == "Ana: It starts now."
    assert context.split() == ["Ben:", *long.split()[:TURN_CONTEXT_WORDS]]
    assert turn_embedding_text("Hi", None, None) == "Hi"
    assert turn_embedding_text("Hi", None, ("  ", "Ben")) == "Hi"


@pytest.fixture
def cli(tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    return Memcli(config=_config(tmp_path / "c.yaml", tmp_path / "m.db", fake_server.ollama_url))


def test_ingest_embeds_each_turn_with_the_one_before_it(cli: Memcli, tmp_path: Path) -> None:
    cli.ok("ingest", str(_chat(tmp_path / "a.jsonl", "s1", TURNS)))
    got = _vectors(tmp_path / "m.db")
    (r1, t1), (r2, t2), (r3, t3) = TURNS
    assert np.allclose(got[t1], _expected(t1, r1, None), atol=1e-6)
    assert np.allclose(got[t2], _expected(t2, r2, (t1, r1)), atol=1e-6)
    assert np.allclose(got[t3], _expected(t3, r3, (t2, r2)), atol=1e-6)
    assert not np.allclose(got[t2], np.asarray(fake_embedding(embedding_text(t2, r2))))


def test_a_later_file_continues_the_session_after_its_stored_last_turn(
    cli: Memcli, tmp_path: Path
) -> None:
    cli.ok("ingest", str(_chat(tmp_path / "a.jsonl", "s1", TURNS[:2])))
    cli.ok("ingest", str(_chat(tmp_path / "b.jsonl", "s1", TURNS[2:], first=3)))
    got = _vectors(tmp_path / "m.db")
    (_, _), (r2, t2), (r3, t3) = TURNS
    assert np.allclose(got[t3], _expected(t3, r3, (t2, r2)), atol=1e-6)


def test_reindex_and_import_embed_turns_as_ingest_did(
    cli: Memcli, tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli.ok("ingest", str(_chat(tmp_path / "a.jsonl", "s1", TURNS)))
    ingested = _vectors(tmp_path / "m.db")
    cli.ok("reindex")
    again = _vectors(tmp_path / "m.db")
    dump = tmp_path / "space.jsonl"
    cli.ok("export", "-o", str(dump))  # without --vectors: import embeds again
    copy = Memcli(config=_config(tmp_path / "d.yaml", tmp_path / "copy.db", fake_server.ollama_url))
    copy.ok("import", str(dump))
    imported = _vectors(tmp_path / "copy.db")
    for _, text in TURNS:
        assert np.allclose(again[text], ingested[text], atol=1e-6)
        assert np.allclose(imported[text], ingested[text], atol=1e-6)
