"""`memcli eval locomo`: the LoCoMo retrieval benchmark, each conversation in its own store."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcli.config import Config
from memcli.errors import InvalidInput, NotFound
from memcli.eval import metrics
from memcli.eval.runner import Benchmark, Conversation, check_strategies, run_benchmark

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def load_samples(path: str) -> list[dict[str, Any]]:
    """The conversations of a locomo10.json-style file."""
    file = Path(path)
    if not file.is_file():
        raise NotFound(f"{path}: no such file", fix="check the path of the LoCoMo JSON file")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput([f"{path}:1: not a LoCoMo JSON file ({exc})"]) from None
    samples = data if isinstance(data, list) else [data]
    if not samples or not all(isinstance(s, dict) and "conversation" in s for s in samples):
        raise InvalidInput(
            [f"{path}:1: expected LoCoMo conversations with 'conversation' and 'qa'"]
        )
    check_turns(path)
    return samples


def check_turns(path: str) -> None:
    """Reject bad turns with the file:line and conversation numbers `memcli ingest` gives."""
    from memcli.models import BadRecord
    from memcli.readers import read_source

    source = read_source(path, "locomo")
    bad = [r for r in source.records if isinstance(r, BadRecord)]
    problems = [f"{source.name}:{r.line}: {r.reason}" for r in bad]
    if problems:
        raise InvalidInput(
            problems,
            fix="fix these turns in the file: eval scores whole conversations, so it cannot "
            "skip them (`memcli ingest --skip-invalid` can, for storing the rest)",
        )


def questions(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The scored questions of a conversation: categories 1-4 with usable evidence."""
    out = []
    for qa in sample.get("qa", []):
        gold = metrics.gold_refs(qa.get("evidence", []))
        asked = str(qa.get("question") or "").strip()
        if qa.get("category") in CATEGORIES and gold and "answer" in qa and asked:
            out.append({**qa, "gold": gold})
    return out


def _turns_only(sample: dict[str, Any]) -> Any:
    """Writes the conversation without its annotations (only turns are memory)."""

    def write(workdir: Path) -> list[str]:
        conv_file = workdir / "conversation.json"
        turns = {"sample_id": sample.get("sample_id"), "conversation": sample["conversation"]}
        conv_file.write_text(json.dumps(turns), encoding="utf-8")
        return [str(conv_file)]

    return write


def benchmark(path: str) -> Benchmark:
    """The conversations of a LoCoMo file, ready for the shared runner."""
    samples = load_samples(path)
    conversations = [
        Conversation(
            name=sample.get("sample_id") or f"conv{index}",
            inputs=_turns_only(sample),
            questions=questions(sample),
            fmt="locomo",
        )
        for index, sample in enumerate(samples)
    ]
    return Benchmark("LoCoMo", path, conversations, CATEGORIES)


def run_locomo(
    path: str, cfg: Config, strategies: Sequence[str], *args: Any, **options: Any
) -> dict[str, Any]:
    """Ingest (and optionally consolidate) each conversation into a temporary store, then
    score every strategy on it; `args` and `options` as `run_benchmark` takes them."""
    check_strategies(strategies)  # before reading the file
    return run_benchmark(benchmark(path), cfg, strategies, *args, **options)
