"""Answer metrics for the benchmark: an LLM judge, token F1, BLEU-1 and tokens per query.

One judge call per question returns both verdicts DESIGN.md asks for: the key facts of the
gold answer, each marked present or not (GAAMA's fractional reward is the share present,
computed here rather than by the model), and a yes/no correctness judgement (MemORAI's).
A question whose answer could not be generated scores 0 everywhere; a question the judge
could not grade is left out of the judge means. Both are counted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pydantic

from memcli.eval.metrics import mean
from memcli.llm.structured import ask_structured
from memcli.prompting import data_block, render
from memcli.text import bare_words

if TYPE_CHECKING:
    from memcli.llm import ChatModel

_ARTICLES = frozenset({"a", "an", "the"})

#: How `tokens_per_query` is counted, stated in every report.
TOKENS_NOTE = (
    "prompt + completion tokens of the answer call, re-asks included; a reply served from "
    "the cache counts the tokens recorded when the model first produced it; judge calls "
    "are not included"
)


def normalize(text: Any) -> list[str]:
    """Answer tokens for lexical scores: lower-cased, punctuation and articles removed."""
    return [t for t in bare_words(str(text)) if t not in _ARTICLES]


def token_f1(prediction: Any, gold: Any) -> float:
    """Harmonic mean of token precision and recall (multiset overlap), after `normalize`."""
    pred, ref = normalize(prediction), normalize(gold)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def bleu1(prediction: Any, gold: Any) -> float:
    """BLEU with unigrams only: clipped unigram precision times the brevity penalty."""
    pred, ref = normalize(prediction), normalize(gold)
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    brevity = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return brevity * clipped / len(pred)


class KeyFact(pydantic.BaseModel):
    """One piece of information the reference answer conveys, and whether the answer has it."""

    fact: str
    present: bool


class JudgeReply(pydantic.BaseModel):
    """The reply the `judge` prompt asks for."""

    key_facts: list[KeyFact] = pydantic.Field(min_length=1)
    correct: bool


@dataclass
class Verdict:
    """The judge's grading of one answer; reward and correct are None when it failed."""

    reward: float | None
    correct: bool | None
    key_facts: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    error: str | None = None
    outcome: str = "none"  # how the judge's request ended (memcli.llm.structured.OUTCOMES)

    def to_dict(self) -> dict[str, Any]:
        """The verdict as stored in a question's row."""
        out: dict[str, Any] = {
            "reward": self.reward,
            "correct": self.correct,
            "key_facts": self.key_facts,
        }
        if self.error:
            out["error"] = self.error
        return out


def judge(
    chat: ChatModel, question: str, reference: Any, response: str, prompts_dir: str | None = None
) -> Verdict:
    """Grade `response` against the reference answer: key-fact coverage and yes/no."""
    prompt = render(
        "judge",
        prompts_dir,
        question=question.strip(),
        reference=str(reference).strip(),
        response=data_block(response),
    )
    result = ask_structured(chat, [{"role": "user", "content": prompt}], JudgeReply)
    tokens = result.prompt_tokens + result.completion_tokens
    if result.value is None:
        return Verdict(None, None, tokens=tokens, error=result.error, outcome=result.outcome)
    facts = result.value.key_facts
    reward = sum(f.present for f in facts) / len(facts)
    dumped = [f.model_dump() for f in facts]
    return Verdict(reward, result.value.correct, dumped, tokens, outcome=result.outcome)


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Answer metrics over scored rows as percentages (None when no row was answered)."""
    scored = [r for r in rows if "f1" in r]
    if not scored:
        return None
    judged = [r for r in scored if r["judge"]["reward"] is not None]
    return {
        "n": len(scored),
        "judged": len(judged),
        "judge_reward": 100 * mean([r["judge"]["reward"] for r in judged]),
        "judge_accuracy": 100 * mean([float(r["judge"]["correct"]) for r in judged]),
        "f1": 100 * mean([r["f1"] for r in scored]),
        "bleu1": 100 * mean([r["bleu1"] for r in scored]),
        "tokens_per_query": mean([float(r["answer_tokens"]) for r in scored]),
        "answer_failures": sum(1 for r in scored if r["generated"] is None),
        "judge_failures": len(scored) - len(judged),
        "dropped_citations": sum(len(r["dropped_citations"]) for r in scored),
        "cited": sum(1 for r in scored if r["citations"]),
        # How the requests ended: first_try, repaired, reasked, invalid, cut (salvaged).
        "answer_outcomes": dict(Counter(r.get("answer_outcome", "none") for r in scored)),
        "judge_outcomes": dict(Counter(r.get("judge_outcome", "none") for r in scored)),
    }


def score(
    mem: Any, qa: dict[str, Any], context: str, repack: Callable[[int], str] | None = None
) -> dict[str, Any]:
    """Answer one benchmark question from its packed context the way `ask` does (packed
    again in fewer words, `repack(words)`, while it does not fit the model), then grade."""
    from memcli.llm.cached import CachedChat, Usage
    from memcli.ops.ask import fitted_answer

    budget = mem.cfg.retrieval.word_budget
    result, words = fitted_answer(mem, qa["question"], budget, context, repack)
    row: dict[str, Any] = {
        "answer_words": words,
        "generated": result.answer,
        "citations": result.citations,
        "dropped_citations": result.dropped,
        "answer_tokens": result.tokens,
        "answer_outcome": result.outcome,
        "llm_calls": result.usage.get("llm_calls", 0),
        "cache_hits": result.usage.get("cache_hits", 0),
    }
    if result.answer is None:
        # The system failed to answer: that is a wrong answer, not an ungraded one.
        row.update(f1=0.0, bleu1=0.0, answer_error=result.error, judge_tokens=0)
        row["judge"] = Verdict(0.0, False).to_dict()
        return row
    usage = Usage()
    chat = CachedChat(mem.chat, mem.store, usage)
    verdict = judge(chat, qa["question"], qa["answer"], result.answer, mem.cfg.prompts_dir)
    row.update(
        f1=token_f1(result.answer, qa["answer"]),
        bleu1=bleu1(result.answer, qa["answer"]),
        judge=verdict.to_dict(),
        judge_tokens=verdict.tokens,
        judge_outcome=verdict.outcome,
    )
    row["llm_calls"] += usage.calls
    row["cache_hits"] += usage.cache_hits
    return row
