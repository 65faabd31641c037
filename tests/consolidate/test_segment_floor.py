"""Topic boundaries: the similarity rule's always stand, and a model may add more. A weak
model that sees no topic change cannot merge the topics the rule tells apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcli.consolidate.segment import merged_starts
from tests.consolidate_helpers import opened
from tests.fakemodel import consolidation_reply, read
from tests.fakeserver import FakeModelServer


def test_the_model_adds_boundaries_away_from_the_rules() -> None:
    assert merged_starts([5, 12], [2, 6, 9], 3) == [2, 5, 9, 12]
    assert merged_starts([5], [], 3) == [5]
    assert merged_starts([], [4, 5], 3) == [4]


def _segments(mem: Any) -> list[list[int]]:
    ids = [s.id for s in mem.store.iter_nodes("default", "segment")]
    members: dict[int, list[int]] = {i: [] for i in ids}
    for edge in mem.store.edges_of(ids, ["PART_OF"]):
        members[edge.dst].append(edge.src)
    return sorted(sorted(m) for m in members.values())


def test_a_model_that_sees_no_boundary_keeps_the_rules(
    chat_store: Path, fake_server: FakeModelServer, tmp_path: Path
) -> None:
    def blind(body: dict[str, Any]) -> str:
        if read(body).task == "boundaries":
            return json.dumps({"boundaries": []})
        return consolidation_reply(body)

    fake_server.responder = blind
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    (plain_dir / "memory.db").write_bytes((chat_store / "memory.db").read_bytes())
    plain = opened(plain_dir, fake_server)
    plain.consolidate(flush=True, no_llm=True, stages=["segment"])
    mem = opened(chat_store, fake_server)
    report = mem.consolidate(flush=True, stages=["segment"])
    assert report.stage("segment").llm_calls > 0
    rule = _segments(plain)
    assert len(rule) > 1 and _segments(mem) == rule
