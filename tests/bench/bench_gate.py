"""The memory gate on LoCoMo dev with the loopback fake model: extraction calls and prompt
tokens with the gate on and off, the share of segments it skipped, and recall@10 of a
strategy on both stores.

    python tests/bench/bench_gate.py [--dev FILE] [--strategy hybrid] [--json-out gate.json]

The fake model (tests/fakemodel.py) answers every consolidation task by its reply schema
(one fact per turn), so the figures measure what the gate spares, not a model's quality.
Embeddings are the configured ones (the bundled MiniLM by default). Not collected by
pytest: run it by hand.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from memcli.config import LLMConfig, load_config  # noqa: E402
from memcli.eval import locomo  # noqa: E402
from memcli.eval.runner import NoProgress, _run_conversation, memory_for, summarize  # noqa: E402
from tests.fakemodel import consolidation_reply  # noqa: E402
from tests.fakeserver import FakeModelServer  # noqa: E402

DEV = ROOT.parent / "shared" / "data" / "locomo-dev.json"
EXTRACTION = ("facts", "entities")


def run(gate: bool, server: FakeModelServer, args: argparse.Namespace, shared: dict) -> dict:
    cfg = load_config(None)
    llm = LLMConfig(provider="ollama", model="fake-chat", url=server.ollama_url, max_retries=1)
    cfg = dataclasses.replace(
        cfg, llm=llm, consolidation=dataclasses.replace(cfg.consolidation, gate=gate)
    )
    bench = locomo.benchmark(args.dev)
    strategy = args.strategy
    counts = dict.fromkeys(("calls", "prompt_tokens", "kept", "skipped", "turns_skipped"), 0)
    counts["tokens_saved"] = 0
    rows: list[dict[str, Any]] = []
    for conv in bench.conversations:
        with tempfile.TemporaryDirectory() as tmp:
            mem, _ = memory_for(conv, cfg, Path(tmp), shared, consolidate=False)
            report = mem.consolidate(flush=True)
            for name in EXTRACTION:
                counts["calls"] += report.stage(name).llm_calls
                counts["prompt_tokens"] += report.stage(name).prompt_tokens
            for key, value in report.stage("gate").extra.items():
                counts[key] += value
            rows += _run_conversation(mem, conv, [strategy], (10,), NoProgress(), False)[strategy]
            mem.close()
    recall = summarize(rows, (10,), bench.labels)["recall"]["10"]
    return {**counts, "recall@10": round(recall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", default=str(DEV), help="the LoCoMo dev file")
    parser.add_argument("--strategy", default="hybrid")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    with FakeModelServer() as server:
        server.responder = consolidation_reply
        shared: dict[str, Any] = {}
        result = {"on": run(True, server, args, shared)}
        result["off"] = run(False, server, args, shared)
    on, off = result["on"], result["off"]
    judged = on["kept"] + on["skipped"]
    result["skipped_share"] = round(on["skipped"] / judged, 3) if judged else 0.0
    result["calls_drop"] = round(1 - on["calls"] / off["calls"], 3) if off["calls"] else 0.0
    sent = off["prompt_tokens"]
    result["prompt_tokens_drop"] = round(1 - on["prompt_tokens"] / sent, 3) if sent else 0.0
    print(json.dumps(result, indent=1))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
