"""`memcli eval chats`: retrieval recall on any conversation annotated with questions.

A benchmark pair is a conversation file in any format `memcli ingest` reads (gzip or not)
whose messages carry ids (JSON Lines `id`), and next to it `<stem>.questions.json`: a JSON
list of {"question", "evidence": [message ids], "answer" (optional), "type" (optional)}.
Recall is scored per question type, the way `eval locomo` scores LoCoMo's categories.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcli.config import Config
from memcli.errors import InvalidInput, NotFound
from memcli.eval.runner import Benchmark, Conversation, check_strategies, run_benchmark

QUESTIONS_SUFFIX = ".questions.json"
UNTYPED = "all"


def _stem(path: Path) -> str:
    """A conversation's name: its file name without `.gz` and the format suffix."""
    name = path.name.removesuffix(".gz")
    return name.rsplit(".", 1)[0] if "." in name else name


def _conversation_for(questions: Path) -> Path:
    """The one conversation file next to a questions file, sharing its stem."""
    stem = questions.name.removesuffix(QUESTIONS_SUFFIX)
    found = sorted(
        p for p in questions.parent.glob(f"{stem}.*")
        if p.is_file() and not p.name.endswith(QUESTIONS_SUFFIX) and _stem(p) == stem
    )  # fmt: skip
    if len(found) != 1:
        what = "no conversation file" if not found else f"{len(found)} conversation files"
        raise NotFound(
            f"{questions}: {what} named {stem}.* next to it",
            fix=f"put exactly one conversation (e.g. {stem}.jsonl or {stem}.jsonl.gz) beside it",
        )
    return found[0]


def find_pairs(paths: Sequence[str]) -> list[tuple[Path, Path]]:
    """(conversation, questions) pairs from directories, questions files or conversations."""
    pairs: list[tuple[Path, Path]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob(f"*{QUESTIONS_SUFFIX}"), key=_natural)
            if not found:
                raise NotFound(
                    f"{raw}: no *{QUESTIONS_SUFFIX} file in this directory",
                    fix="pair each conversation N.jsonl(.gz) with N.questions.json",
                )
            pairs.extend((_conversation_for(q), q) for q in found)
        elif path.name.endswith(QUESTIONS_SUFFIX) and path.is_file():
            pairs.append((_conversation_for(path), path))
        elif path.is_file():
            questions = path.with_name(_stem(path) + QUESTIONS_SUFFIX)
            if not questions.is_file():
                raise NotFound(f"{raw}: no {questions.name} next to it",
                               fix="write the questions with their evidence ids there")  # fmt: skip
            pairs.append((path, questions))
        else:
            raise NotFound(
                f"{raw}: no such file or directory",
                fix="pass a directory of N.jsonl + N.questions.json pairs, or their files",
            )
    return list(dict.fromkeys(pairs))


def _natural(path: Path) -> tuple[Any, ...]:
    """Sort key putting 2.questions.json before 10.questions.json."""
    stem = path.name.removesuffix(QUESTIONS_SUFFIX)
    return (0, int(stem), "") if stem.isdigit() else (1, 0, stem)


def message_sessions(conversation: Path) -> dict[str, str]:
    """Each message id of a conversation -> its session; bad records are an error."""
    from memcli.models import BadRecord, Episode
    from memcli.readers import read_source

    source = read_source(str(conversation))
    bad = [f"{source.name}:{r.line}: {r.reason}" for r in source.records
           if isinstance(r, BadRecord)]  # fmt: skip
    if bad:
        raise InvalidInput(
            bad,
            fix="fix these messages: eval scores whole conversations, so it cannot skip them",
        )
    episodes = [r for r in source.records if isinstance(r, Episode)]  # the bad ones raised
    sessions = {ep.ref: ep.session or "default" for ep in episodes if ep.ref is not None}
    if not sessions:
        raise InvalidInput(
            [f"{source.name}:1: no message has an id, so no evidence can point at one"],
            fix='give every message an "id" (the questions\' evidence lists those ids)',
        )
    return sessions


def load_questions(path: Path, sessions: dict[str, str]) -> list[dict[str, Any]]:
    """The scored questions of a questions file, their evidence checked against the ids."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput([f"{path}:1: not a JSON questions file ({exc})"]) from None
    items = data.get("questions") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise InvalidInput([f"{path}:1: expected a JSON list of questions"])
    problems: list[str] = []
    out = [q for i, item in enumerate(items, 1) if (q := _question(item, sessions, problems, i))]
    if problems:
        raise InvalidInput(
            [f"{path}: {p}" for p in problems],
            fix='each question needs "question" (text) and "evidence" (message ids present '
            'in the conversation); "answer" and "type" are optional',
        )
    return out


def _question(
    item: Any, sessions: dict[str, str], problems: list[str], number: int
) -> dict[str, Any] | None:
    """One checked question, or None after noting what is wrong with it."""
    asked = item.get("question") if isinstance(item, dict) else None
    if not isinstance(asked, str) or not asked.strip():
        problems.append(f'question {number}: no "question" text')
        return None
    evidence = item.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        problems.append(f'question {number}: "evidence" must be a non-empty list of ids')
        return None
    gold = list(dict.fromkeys(str(e) for e in evidence))
    unknown = [e for e in gold if e not in sessions]
    if unknown:
        problems.append(f"question {number}: evidence id(s) {', '.join(unknown[:5])} "
                        "match no message id")  # fmt: skip
        return None
    category = str(item.get("type") or UNTYPED)
    answer = item.get("answer", "")
    return {**item, "gold": gold, "category": category, "answer": answer}


def _chat(conversation: Path, questions: Path) -> Conversation:
    sessions = message_sessions(conversation)
    return Conversation(
        name=_stem(conversation),
        inputs=lambda _workdir: [str(conversation)],
        questions=load_questions(questions, sessions),
        session_of=lambda ref: sessions.get(ref, ref),
    )


def benchmark(paths: Sequence[str]) -> Benchmark:
    """Every (conversation, questions) pair the paths name, ready for the shared runner."""
    conversations = [_chat(c, q) for c, q in find_pairs(paths)]
    names = [c.name for c in conversations]
    for conv, (path, _) in zip(conversations, find_pairs(paths), strict=True):
        if names.count(conv.name) > 1:
            conv.name = str(path)  # the same stem in two directories
    types = sorted({q["category"] for c in conversations for q in c.questions})
    return Benchmark("Chats", ", ".join(paths), conversations, {t: t for t in types}, "type")


def run_chats(
    paths: Sequence[str], cfg: Config, strategies: Sequence[str], *args: Any, **options: Any
) -> dict[str, Any]:
    """Each conversation in its own temporary store (optionally consolidated), every
    strategy asked its questions, recall per question type; `args` and `options` as
    `run_benchmark` takes them."""
    check_strategies(strategies)  # before reading anything
    return run_benchmark(benchmark(paths), cfg, strategies, *args, **options)
