"""How each structured request ended is counted where it happened: per consolidation stage
(json_first_try, json_repaired, json_reasked, json_invalid, json_cut) and, for eval, per
answer and per judge call."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from memcli.config import LLMConfig
from memcli.eval.answers import summarize
from memcli.llm import ollama as ollama_provider
from memcli.llm.structured import ask_structured
from tests.consolidate_helpers import opened
from tests.fakemodel import ScriptedLLM
from tests.fakeserver import FakeModelServer

USER = [{"role": "user", "content": "which city?"}]


class City(BaseModel):
    city: str


@pytest.mark.parametrize(
    ("replies", "outcome"),
    [
        (['{"city": "Oslo"}'], "first_try"),
        (['Sure: ```json\n{"city": "Oslo",}\n```'], "repaired"),
        (['{"town": "Oslo"}', '{"city": "Oslo"}'], "reasked"),
        (["no", "no", "no"], "invalid"),
    ],
)
def test_each_request_ends_one_way(
    fake_server: FakeModelServer, replies: list[str], outcome: str
) -> None:
    fake_server.reply(*replies)
    cfg = LLMConfig(provider="ollama", model="m", url=fake_server.ollama_url)
    result = ask_structured(ollama_provider.create_chat(cfg), USER, City)
    assert result.outcome == outcome


def test_consolidation_counts_them_per_stage(
    chat_store: Path, fake_server: FakeModelServer
) -> None:
    llm = ScriptedLLM()
    llm.bad_first = {"extract"}
    fake_server.responder = llm
    report = opened(chat_store, fake_server).consolidate(flush=True)
    facts, summaries = report.stage("facts").extra, report.stage("summarize").extra
    assert facts["json_reasked"] == llm.reasks["extract"] > 0
    assert "json_first_try" not in facts
    assert summaries["json_first_try"] > 0 and "json_reasked" not in summaries


def test_eval_counts_them_per_answer_and_judge() -> None:
    rows = [
        {"f1": 1.0, "bleu1": 1.0, "generated": "x", "citations": ["ep1"], "answer_tokens": 9,
         "dropped_citations": [], "answer_outcome": "first_try", "judge_outcome": "reasked",
         "judge": {"reward": 1.0, "correct": True}},
        {"f1": 0.0, "bleu1": 0.0, "generated": None, "citations": [], "answer_tokens": 9,
         "dropped_citations": [], "answer_outcome": "invalid",
         "judge": {"reward": 0.0, "correct": False}},
    ]  # fmt: skip
    out = summarize(rows)
    assert out is not None and out["cited"] == 1
    assert out["answer_outcomes"] == {"first_try": 1, "invalid": 1}
    assert out["judge_outcomes"] == {"reasked": 1, "none": 1}
