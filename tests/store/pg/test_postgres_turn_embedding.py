"""On a Postgres store a turn is embedded with the turn before it as on a SQLite file,
a later file's first turn with the session's last stored turn (memcli.ops.ingest reads
it through the store: session_tail, nodes_by_ids)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memcli.store import open_store
from tests.cli_runner import Memcli
from tests.fakeserver import FakeModelServer
from tests.retrieval.test_turn_embedding import TURNS, _chat, _config, _expected

pytestmark = pytest.mark.postgres


def _ingested(tmp_path: Path, pg_url: str, server: FakeModelServer) -> Memcli:
    """The CLI on a Postgres store holding TURNS (one session), embedded by the fake server."""
    config = _config(tmp_path / "c.yaml", tmp_path / "unused.db", server.ollama_url)
    cli = Memcli(config=config, env={"MEMCLI_DB": pg_url})
    cli.ok("ingest", str(_chat(tmp_path / "a.jsonl", "s1", TURNS)))
    return cli


def _vectors(target: str) -> dict[str, np.ndarray]:
    """Each turn's stored vector, by its text."""
    with open_store(target) as store:
        nodes = {n.id: n for n in store.iter_nodes("default", "episode")}
        return {nodes[i].text: np.asarray(v) for i, v in store.get_vectors(list(nodes)).items()}


def test_both_backends_embed_each_turn_with_the_one_before_it(
    tmp_path: Path, pg_url: str, fake_server: FakeModelServer
) -> None:
    first = _chat(tmp_path / "a.jsonl", "s1", TURNS[:2])
    later = _chat(tmp_path / "b.jsonl", "s1", TURNS[2:], first=3)
    config = _config(tmp_path / "c.yaml", tmp_path / "unused.db", fake_server.ollama_url)
    targets = [str(tmp_path / "m.db"), pg_url]
    for target in targets:
        cli = Memcli(config=config, env={"MEMCLI_DB": target})
        cli.ok("ingest", str(first))
        cli.ok("ingest", str(later))
    sqlite, pg = (_vectors(t) for t in targets)
    assert sqlite.keys() == pg.keys() == {text for _, text in TURNS}
    for text, vector in sqlite.items():
        assert np.array_equal(pg[text], vector), text
    (_, _), (r2, t2), (r3, t3) = TURNS  # the later file's turn, with the stored one before it
    assert np.allclose(pg[t3], _expected(t3, r3, (t2, r2)), atol=1e-6)


def test_forgetting_a_turn_embeds_the_next_one_again_on_postgres(
    tmp_path: Path, pg_url: str, fake_server: FakeModelServer
) -> None:
    cli = _ingested(tmp_path, pg_url, fake_server)
    with open_store(pg_url) as store:
        ids = {n.text: n.node_id for n in store.iter_nodes("default", "episode")}
    cli.ok("prune", "--node", ids[TURNS[1][1]], "--yes")
    (r1, t1), (_, t2), (r3, t3) = TURNS
    got = _vectors(pg_url)
    assert t2 not in got
    assert np.allclose(got[t3], _expected(t3, r3, (t1, r1)), atol=1e-6)


def test_doctor_samples_a_postgres_store_s_turn_vectors(
    tmp_path: Path, pg_url: str, fake_server: FakeModelServer
) -> None:
    import json

    cli = _ingested(tmp_path, pg_url, fake_server)
    rows = [json.loads(line) for line in cli("--json", "doctor").stdout.splitlines()]
    [vectors] = [r for r in rows if r["check"] == "vectors"]
    assert vectors["status"] == "ok" and vectors["current"] == vectors["sampled"] == 2, vectors
