"""A turn is embedded beside the turn before it, so forgetting that turn embeds the one
after it again, beside the turn now before it; where the embedder cannot be used, prune
still forgets and says which vectors wait for `memcli reindex`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer
from tests.retrieval.test_turn_embedding import TURNS, _chat, _config, _expected, _vectors


def _ingested(tmp_path: Path, fake_server: FakeModelServer) -> Memcli:
    cli = Memcli(config=_config(tmp_path / "c.yaml", tmp_path / "m.db", fake_server.ollama_url))
    cli.ok("ingest", str(_chat(tmp_path / "a.jsonl", "s1", TURNS)))
    return cli


def test_the_turn_after_a_forgotten_one_is_embedded_beside_the_turn_now_before_it(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _ingested(tmp_path, fake_server)
    (r1, t1), (_, t2), (r3, t3) = TURNS
    before = _vectors(tmp_path / "m.db")
    out = cli.ok("prune", "--node", "ep2", "--yes").stdout
    assert "1 turn after a forgotten one embedded again without it" in out
    after = _vectors(tmp_path / "m.db")
    assert t2 not in after
    assert np.allclose(after[t3], _expected(t3, r3, (t1, r1)), atol=1e-6)
    assert not np.allclose(after[t3], before[t3], atol=1e-6)
    assert np.allclose(after[t1], before[t1], atol=1e-6)  # the turn before: untouched


def test_the_first_turn_forgotten_leaves_the_next_with_no_turn_before(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    cli = _ingested(tmp_path, fake_server)
    (_, _), (r2, t2), (_, t3) = TURNS
    before = _vectors(tmp_path / "m.db")
    cli.ok("prune", "--node", "ep1", "--yes")
    after = _vectors(tmp_path / "m.db")
    assert np.allclose(after[t2], _expected(t2, r2, None), atol=1e-6)
    assert np.allclose(after[t3], before[t3], atol=1e-6)


def test_without_a_usable_embedder_prune_still_forgets_and_names_the_stale_vectors(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    _ingested(tmp_path, fake_server)
    before = _vectors(tmp_path / "m.db")
    other = tmp_path / "other.yaml"  # a model the store's vectors were not made with
    other.write_text(
        _config(tmp_path / "x.yaml", tmp_path / "m.db", fake_server.ollama_url)
        .read_text(encoding="utf-8")
        .replace("fake-embed", "another-embed"),
        encoding="utf-8",
    )
    out = Memcli(config=other).ok("prune", "--node", "ep2", "--yes").stdout
    assert "1 turn after a forgotten one keeps a vector made beside it" in out
    assert "memcli reindex" in out
    after = _vectors(tmp_path / "m.db")
    (_, t2), (_, t3) = TURNS[1], TURNS[2]
    assert t2 not in after and np.allclose(after[t3], before[t3], atol=1e-6)
