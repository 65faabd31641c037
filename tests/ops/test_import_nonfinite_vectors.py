"""A dump whose vector holds NaN or infinity is refused before anything is written: one
such vector would break every semantic and hybrid search of its space."""

from __future__ import annotations

import base64
import json
import math
import struct
from pathlib import Path

import pytest

from tests.cli_runner import Memcli
from tests.consolidate_helpers import config_file
from tests.fakeserver import FakeModelServer
from tests.paths import EXAMPLE


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_vector_is_refused(
    tmp_path: Path, fake_server: FakeModelServer, bad: float
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    source = Memcli(config=config_file(tmp_path / "a", fake_server, llm=False))
    source.ok("ingest", EXAMPLE)
    dump = tmp_path / "dump.jsonl"
    source.ok("export", "--vectors", "-o", dump)
    records = [json.loads(line) for line in dump.read_text().splitlines()]
    node = next(r for r in records if r.get("vector"))
    floats = list(struct.unpack(f"<{len(base64.b64decode(node['vector'])) // 4}f",
                                base64.b64decode(node["vector"])))  # fmt: skip
    floats[3] = bad
    node["vector"] = base64.b64encode(struct.pack(f"<{len(floats)}f", *floats)).decode()
    dump.write_text("".join(json.dumps(r) + "\n" for r in records))
    target = Memcli(config=config_file(tmp_path / "b", fake_server, llm=False))
    result = target("import", dump)
    assert result.exit_code == 4, result.stderr
    assert f"node {node['id']}: its vector holds NaN or infinity" in result.stderr
    assert not (tmp_path / "b" / "memory.db").exists()
