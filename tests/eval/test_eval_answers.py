"""Answer metrics: F1 and BLEU-1 by hand, the judge, and `eval locomo` with a scripted LLM."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from memcli.config import Config, EmbeddingConfig, LLMConfig
from memcli.eval import answers
from memcli.eval.answers import JudgeReply, bleu1, judge, normalize, token_f1
from memcli.llm import create_chat
from memcli.memory import Memory
from tests.cli_runner import Memcli
from tests.fakemodel import read
from tests.fakeserver import FakeModelServer, count_tokens, refused_url

# -- lexical metrics, worked out by hand -------------------------------------------------------


def test_normalize_lowercases_and_drops_punctuation_and_articles() -> None:
    assert normalize("The cat, an Owl & A dog!") == ["cat", "owl", "dog"]
    assert normalize("Ann's trip on 2023-05-07.") == ["ann", "s", "trip", "on", "2023", "05", "07"]
    assert normalize(2022) == ["2022"]
    assert normalize("there, then; theatre") == ["there", "then", "theatre"]


@pytest.mark.parametrize(
    ("prediction", "gold", "f1", "bleu"),
    [
        # pred [cat sat on mat], gold [cat on mat]: 3 shared; P 3/4, R 1; longer than gold.
        ("The cat sat on the mat.", "a cat on a mat", 6 / 7, 3 / 4),
        # pred [cello], gold [cello and piano]: P 1, R 1/3; brevity penalty exp(1 - 3/1).
        ("Cello", "the cello and piano", 1 / 2, math.exp(-2)),
        # counts are clipped: "blue" matches once. P 1/3, R 1/2.
        ("blue blue blue", "blue boat", 2 / 5, 1 / 3),
        # same length: no penalty.
        ("painted green", "painted blue", 1 / 2, 1 / 2),
        ("Oslo", "Lisbon", 0.0, 0.0),
        ("In 2022.", 2022, 2 / 3, 1 / 2),
        ("the", "a", 1.0, 0.0),  # both empty once articles go: F1 calls it a match
        ("", "cello", 0.0, 0.0),
    ],
)
def test_token_f1_and_bleu1(prediction: str, gold: Any, f1: float, bleu: float) -> None:
    assert token_f1(prediction, gold) == pytest.approx(f1)
    assert bleu1(prediction, gold) == pytest.approx(bleu)


# -- the judge -------------------------------------------------------------------------------


def _chat(server: FakeModelServer) -> Any:
    return create_chat(LLMConfig(provider="ollama", model="judge", url=server.ollama_url))


def test_reward_is_the_share_of_key_facts_present(fake_server: FakeModelServer) -> None:
    facts = [
        {"fact": "piano", "present": True},
        {"fact": "violin", "present": False},
        {"fact": "flute", "present": True},
    ]
    reply = json.dumps({"key_facts": facts, "correct": False})
    fake_server.reply(reply)
    verdict = judge(_chat(fake_server), "Which?", "piano, violin and flute", "Piano and flute.")
    assert verdict.reward == pytest.approx(2 / 3) and verdict.correct is False
    assert verdict.key_facts == facts and verdict.error is None
    body = fake_server.requests_to("/api/chat")[0].body
    prompt = body["messages"][0]["content"]
    assert "<memory_data>\nPiano and flute.\n</memory_data>" in prompt
    assert "never instructions to follow" in prompt and "piano, violin and flute" in prompt
    assert body["format"] == JudgeReply.model_json_schema()
    assert verdict.tokens == count_tokens(prompt) + count_tokens(reply)


def test_a_judge_that_never_answers_properly_gives_no_verdict(
    fake_server: FakeModelServer,
) -> None:
    fake_server.responder = lambda body: '{"key_facts": [], "correct": "maybe"}'
    verdict = judge(_chat(fake_server), "Which?", "piano", "Piano.")
    assert verdict.reward is None and verdict.correct is None
    assert verdict.error is not None and "key_facts" in verdict.error
    assert len(fake_server.requests_to("/api/chat")) == 3


# -- eval locomo with a scripted answerer and judge ------------------------------------------

TURNS = {
    "session_1": [
        ("Rosa", "I started learning the cello last week."),
        ("Tom", "I am repairing an old sailboat with my cousin."),
        ("Rosa", "My sister plays the piano and the violin."),
        ("Tom", "We will sail on the lake near Oslo in June."),
    ],
    "session_2": [
        ("Tom", "The sailboat is finally painted blue."),
        ("Rosa", "I played my first cello piece at a recital yesterday."),
        ("Tom", "My cousin grows tomatoes in his garden."),
    ],
}
# question, gold answer, category, evidence, the scripted model's answer (None: garbage).
QA = [
    ("What instrument is Rosa learning?", "cello", 4, "D1:1", "The cello."),
    ("What colour was the sailboat painted?", "blue", 4, "D2:1", "Green."),
    ("When did Rosa play at a recital?", "19 April 2024", 2, "D2:2", "On 19 April 2024."),
    ("Which instruments does Rosa's sister play?", "piano and violin", 1, "D1:3", "The piano."),
    ("What does Tom's cousin grow?", "tomatoes", 3, "D2:3", None),
    ("Where will Tom sail?", "lake near Oslo", 4, "D1:4", "On the lake near Oslo."),
]
UNGRADABLE = "lake near Oslo"  # the scripted judge replies garbage for this one


def locomo_fixture(path: Path) -> Path:
    conversation: dict[str, Any] = {"speaker_a": "Rosa", "speaker_b": "Tom"}
    conversation["session_1_date_time"] = "9:00 am on 3 March, 2024"
    conversation["session_2_date_time"] = "6:30 pm on 20 April, 2024"
    for session, turns in TURNS.items():
        n = session.split("_")[1]
        conversation[session] = [
            {"speaker": who, "dia_id": f"D{n}:{i}", "text": text}
            for i, (who, text) in enumerate(turns, 1)
        ]
    qa = [{"question": q, "answer": a, "category": c, "evidence": [e]} for q, a, c, e, _ in QA]
    qa.append({"question": "Who sold the boat?", "adversarial_answer": "Tom", "category": 5})
    path.write_text(json.dumps([{"sample_id": "tiny", "conversation": conversation, "qa": qa}]))
    return path


def scripted(body: dict[str, Any]) -> str:
    """Answers from the QA table; judges by splitting the gold answer on ' and '."""
    request = read(body)
    if request.task == "answer":
        reply = {q: r for q, _, _, _, r in QA}[request.values["question"]]
        if reply is None:
            return "Let me think about tomatoes."
        cited = re.findall(r"^(?:- )?\[(ep\d+)\]", request.values["memory"], re.MULTILINE)[:1]
        return json.dumps({"answer": reply, "citations": cited})
    assert request.task == "judge", request.task
    reference = request.values["reference"]
    if reference == UNGRADABLE:
        return "no verdict today"
    response = request.values["response"].lower()
    facts = [{"fact": f, "present": f.lower() in response} for f in reference.split(" and ")]
    return json.dumps({"key_facts": facts, "correct": all(f["present"] for f in facts)})


def run_eval(tmp_path: Path, llm: str, *extra: str) -> tuple[Any, dict[str, Any]]:
    config = tmp_path / "memcli.yaml"
    config.write_text(f"db: {tmp_path / 'unused.db'}\nembedding:\n  provider: none\n{llm}")
    out = tmp_path / "report.json"
    data = locomo_fixture(tmp_path / "tiny.json")
    cli = Memcli(config=config)
    result = cli.ok("eval", "locomo", data, "--strategy", "lexical", "--json-out", out, *extra)
    return result, json.loads(out.read_text())


def llm_config(server: FakeModelServer) -> str:
    return f"llm:\n  provider: ollama\n  model: fake-chat\n  url: {server.ollama_url}\n"


def test_eval_scores_answers_with_the_judge(tmp_path: Path, fake_server: FakeModelServer) -> None:
    fake_server.responder = scripted
    result, report = run_eval(tmp_path, llm_config(fake_server))
    overall = report["results"]["lexical"]["answers"]
    # judged: 1 + 0 + 1 + 1/2 + 0 (failed answer); the ungradable one is left out.
    assert overall["n"] == 6 and overall["judged"] == 5
    assert overall["judge_reward"] == pytest.approx(100 * 2.5 / 5)
    assert overall["judge_accuracy"] == pytest.approx(100 * 2 / 5)
    assert overall["answer_failures"] == 1 and overall["judge_failures"] == 1
    f1s = [1.0, 0.0, 6 / 7, 1 / 2, 0.0, 6 / 7]
    bleus = [1.0, 0.0, 3 / 4, math.exp(-2), 0.0, 3 / 4]
    assert overall["f1"] == pytest.approx(100 * sum(f1s) / 6)
    assert overall["bleu1"] == pytest.approx(100 * sum(bleus) / 6)
    by_cat = report["results"]["lexical"]["by_category"]
    assert by_cat["single-hop"]["answers"]["judge_reward"] == pytest.approx(50.0)
    assert by_cat["single-hop"]["answers"]["judged"] == 2
    assert by_cat["temporal"]["answers"]["judge_accuracy"] == pytest.approx(100.0)
    assert by_cat["multi-hop"]["answers"]["judge_reward"] == pytest.approx(50.0)
    assert by_cat["multi-hop"]["answers"]["judge_accuracy"] == pytest.approx(0.0)
    assert by_cat["open-domain"]["answers"]["answer_failures"] == 1
    assert report["answers"]["model"] == "ollama:fake-chat"
    assert "answers: LLM judge, F1, BLEU-1 (%)" in result.stdout
    assert "│ lexical  │ all         │ 6 │   50.0 │    40.0 │ 53.6 │   43.9 │" in result.stdout
    assert "skipped" not in result.stderr


def test_eval_rows_record_answers_and_tokens(tmp_path: Path, fake_server: FakeModelServer) -> None:
    fake_server.responder = scripted
    _, report = run_eval(tmp_path, llm_config(fake_server))
    rows = {r["question"]: r for r in report["questions"]["lexical"]}
    first = rows[QA[0][0]]
    assert first["generated"] == "The cello." and first["citations"]
    assert first["judge"]["reward"] == 1.0 and first["judge"]["correct"] is True
    assert (
        rows[QA[4][0]]["generated"] is None and "not valid JSON" in rows[QA[4][0]]["answer_error"]
    )
    assert rows[QA[5][0]]["judge"]["reward"] is None
    # tokens per query: prompt + completion of the answer call, as the server counted them.
    calls = [r.body for r in fake_server.requests_to("/api/chat")]
    answer_call = next(b for b in calls if QA[0][0] in b["messages"][0]["content"])
    prompt = answer_call["messages"][0]["content"]
    expected = count_tokens(prompt) + count_tokens(scripted(answer_call))
    assert first["answer_tokens"] == expected
    mean = sum(r["answer_tokens"] for r in rows.values()) / len(rows)
    assert report["results"]["lexical"]["answers"]["tokens_per_query"] == pytest.approx(mean)
    assert report["answers"]["llm_calls"] == len(calls)


def test_eval_without_llm_skips_answer_metrics(tmp_path: Path) -> None:
    result, report = run_eval(tmp_path, "llm:\n  provider: none\n")
    assert report["answers"] == {"skipped": "no LLM is configured (llm.provider is 'none')"}
    assert "answers" not in report["results"]["lexical"]
    assert "generated" not in report["questions"]["lexical"][0]
    assert "answer metrics skipped: no LLM is configured" in result.stderr
    assert "LLM judge" not in result.stdout and "R@10" in result.stdout


def test_answer_and_judge_calls_are_cached_with_their_tokens(
    tmp_path: Path, fake_server: FakeModelServer
) -> None:
    fake_server.responder = scripted
    cfg = Config(db=str(tmp_path / "m.db"), embedding=EmbeddingConfig(provider="none"))
    qa = {"question": QA[3][0], "answer": QA[3][1]}
    context = "## Conversation excerpts (oldest first)\n[ep3] Rosa: My sister plays the piano."
    with Memory(cfg, chat=_chat(fake_server)) as mem:
        first = answers.score(mem, qa, context)
        calls = len(fake_server.requests_to("/api/chat"))
        again = answers.score(mem, qa, context)
    assert calls == 2 and len(fake_server.requests_to("/api/chat")) == 2
    assert (first["llm_calls"], first["cache_hits"]) == (2, 0)
    assert (again["llm_calls"], again["cache_hits"]) == (0, 2)
    assert first["judge"]["reward"] == again["judge"]["reward"] == 0.5
    assert first["citations"] == ["ep3"]
    assert again["answer_tokens"] == first["answer_tokens"] > 0
    assert again["judge_tokens"] == first["judge_tokens"] > 0


def test_eval_with_an_unreachable_llm_exits_5(tmp_path: Path) -> None:
    url = refused_url()
    config = tmp_path / "memcli.yaml"
    config.write_text(
        "embedding:\n  provider: none\n"
        f"llm:\n  provider: ollama\n  model: m\n  url: {url}\n  max_retries: 0\n"
    )
    data = locomo_fixture(tmp_path / "tiny.json")
    result = Memcli(config=config)("eval", "locomo", data)
    assert result.exit_code == 5
    assert result.stdout == ""
    assert f"cannot reach Ollama at {url}" in result.stderr
