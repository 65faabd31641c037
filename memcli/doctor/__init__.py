"""`memcli doctor`: the configured embedder and LLM checked in seconds, each check with a fix.

Checks, in order: the embedder answers (and how fast); an LLM is configured; its server is
reachable and lists the model; a reply constrained to a small JSON schema comes back valid
(and in which form the schema was sent); the context window and where its size came from;
tokens per second on that short request; then, when the configured store exists, SQLite's
integrity check of its file, whether its vectors were made by the configured embedder (and
no reindex was left unfinished), and whether its turn vectors are made as ingest makes them
now.
A failed check sets the exit code: 3 for a configuration error, 5 for a server that cannot
be reached or lacks the model, 6 for a model whose reply does not fit the schema, 7 for a
damaged store file. Warnings leave it 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pydantic

from memcli.doctor.vectors import sampled_turns, vector_kinds
from memcli.errors import DatabaseError, MemcliError, ModelOutputInvalid, damaged_store

if TYPE_CHECKING:
    from memcli.config import Config
    from memcli.llm import ChatModel, Embedder

PROBE = [
    {
        "role": "user",
        "content": 'Reply with JSON only, {"colour": "<one word>"}: the usual colour of a '
        "clear sky at noon.",
    }
]


class Probe(pydantic.BaseModel):
    """The reply doctor asks for: one short field."""

    colour: str = pydantic.Field(min_length=1)


@dataclass
class Check:
    """One check's outcome: ok | warn | fail | skip, what was found, and how to fix it."""

    name: str
    status: str
    detail: str
    fix: str | None = None
    code: int = 0  # the exit code a failure means
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        out: dict[str, Any] = {"check": self.name, "status": self.status, "detail": self.detail}
        if self.fix:
            out["fix"] = self.fix
        return {**out, **self.data}


@dataclass
class DoctorReport:
    """Every check, in order."""

    checks: list[Check] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """The code of the first failed check, 0 when none failed."""
        return next((c.code or 1 for c in self.checks if c.status == "fail"), 0)

    def add(self, check: Check) -> Check:
        """Append a check and return it."""
        self.checks.append(check)
        return check


def _failed(name: str, exc: MemcliError) -> Check:
    return Check(name, "fail", exc.message, exc.fix, exc.exit_code)


def check_embedder(
    cfg: Config, create: Callable[[Any], Embedder | None]
) -> tuple[Check, Embedder | None]:
    """The embedder loads and embeds a word; its dimension and time (and the embedder, when
    it works)."""
    emb = cfg.embedding
    if emb.provider == "none":
        return Check(
            "embedding", "warn", "no embedder (embedding.provider: none): full-text search only",
            "set embedding.provider to local (the default) for semantic search",
        ), None  # fmt: skip
    started = time.perf_counter()
    try:
        embedder = create(emb)
        vectors = embedder.embed(["memcli doctor"]) if embedder is not None else None
    except MemcliError as exc:
        return _failed("embedding", exc), None
    seconds = time.perf_counter() - started
    dim = int(vectors.shape[1]) if vectors is not None else 0
    model = getattr(embedder, "model", emb.model)
    if emb.model == "auto":  # a new English store's model; other stores keep their own
        from memcli.llm.e5_embed import E5_MODEL

        model = f"auto ({model} for a new store of English turns, {E5_MODEL} for others)"
    detail = f"{emb.provider}:{model}, {dim} dimensions, first vector in {seconds:.2f} s"
    data = {"dimensions": dim, "seconds": round(seconds, 3)}
    return Check("embedding", "ok", detail, data=data), embedder


_REINDEX_FIX = "run `memcli reindex` to embed every turn again as ingest does now"
# What the stored vectors of the turns of each kind are (memcli.doctor.vectors.vector_kinds).
_STALE = (
    ("plain", "have vectors of the turn alone, made before memcli embedded a turn with the "
              "turn before it: semantic search ranks them lower than it would"),
    ("other", "have vectors that are not this model's embedding of the turn, with or "
              "without the turn before it (another version or other settings made them)"),
)  # fmt: skip


def check_vectors(cfg: Config, embedder: Embedder) -> Check:
    """Whether the store's turn vectors are made as ingest makes them now: each sampled
    turn embedded again with the turn before it (memcli.models.turn_embedding_text) and
    without it, and compared with its stored vector. Stores ingested before memcli embedded
    turns with their context keep vectors of the turn alone, which semantic search ranks
    worse, until `memcli reindex` (docs/retrieval.md, "Turn context")."""
    from memcli.memory import Memory

    try:
        mem = Memory(cfg, embedder=embedder, create=False)
    except MemcliError as exc:
        return Check("vectors", "skip", exc.message)
    try:
        mem.check_embedder()
        turns = sampled_turns(mem.store)
        if not turns:
            return Check("vectors", "skip", "no stored turn has a vector and a turn before it")
        kinds = vector_kinds(mem.store, embedder, turns)
    except MemcliError as exc:
        return Check("vectors", "warn", exc.message, exc.fix)
    finally:
        mem.close()
    sampled = sum(kinds.values())
    data = {"sampled": sampled, **kinds}
    if not sampled:
        detail = "the turns sampled embed alike with and without the turn before them"
        return Check("vectors", "skip", detail, data=data)
    for kind, what in _STALE:
        if kinds[kind]:
            detail = f"{kinds[kind]} of {sampled} turns sampled {what}"
            return Check("vectors", "warn", detail, _REINDEX_FIX, data=data)
    detail = f"{sampled} turns sampled: their vectors are made as ingest makes them now"
    return Check("vectors", "ok", detail, data=data)


def check_store_model(cfg: Config) -> Check | None:
    """Whether the store's vectors were made by the configured embedder (vectors of two
    models cannot be compared), and whether a reindex was left unfinished; None when there
    is no store. Reads the store's record alone: no model is loaded."""
    from memcli.errors import EmbeddingMismatch, NotFound
    from memcli.memory import Memory
    from memcli.store.reindex_rows import WORDS_KEY, unfinished_reindex

    try:
        mem = Memory(cfg, create=False)
    except NotFound:
        return None
    except MemcliError as exc:
        return Check("store model", "skip", exc.message)
    try:
        stored, wanted = mem.stored_identity(), mem.embedder_identity()
        stopped, words = unfinished_reindex(mem.store), mem.store.get_meta(WORDS_KEY)
    finally:
        mem.close()
    data = {"stored": stored, "configured": wanted}
    if stored is None:
        return Check("store model", "skip", f"no vectors yet: {wanted} will make them", data=data)
    if stored != wanted:
        done = stopped[1] if stopped is not None and stopped[0] == wanted else None
        error = EmbeddingMismatch(stored, wanted, reindexed=done)
        return Check("store model", "fail", error.message, error.fix, error.exit_code, data=data)
    if stopped is not None:
        detail = (
            f"vectors made by {stored}, as configured; a reindex to {stopped[0]} was stopped "
            f"after {stopped[1]:,} nodes (its vectors wait in the store)"
        )
        fix = "configure that model and run `memcli reindex` to finish it (a reindex with "
        fix += "this model discards them)"
        return Check("store model", "warn", detail, fix, data=data)
    if words is not None:
        detail = f"vectors made by {stored}, but a reindex stopped before the words of turns"
        return Check("store model", "warn", detail, "run `memcli reindex` to finish", data=data)
    return Check("store model", "ok", f"vectors made by {stored}, as configured", data=data)


def check_store(cfg: Config) -> Check | None:
    """SQLite's integrity check of the store file, run by the SQLite memcli uses (a system
    sqlite3 older than the store's features may call a healthy store damaged); None when
    there is no store file to check."""
    from memcli.store import check_integrity

    try:
        problems = check_integrity(cfg.db_path)
    except MemcliError as exc:
        return _failed("store", exc)
    except Exception as exc:
        damaged = damaged_store(exc)
        if damaged is None:
            raise
        problems = [str(exc)]
    if problems is None:
        return None
    if not problems:
        return Check("store", "ok", "SQLite's integrity check found nothing wrong")
    more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
    return Check(
        "store", "fail", f"the store file is damaged: {problems[0]}{more}", _DAMAGED_FIX,
        DatabaseError.exit_code, data={"problems": problems},
    )  # fmt: skip


# Not damaged_store's fix, which sends the user here.
_DAMAGED_FIX = (
    "restore it from a backup (or import a `memcli export` dump into a new --db); "
    "`memcli export` may still save what can be read"
)


def _model_listed(chat: Any) -> Check:
    """Whether the server answers and lists the configured model."""
    listed = chat.listed_models() if hasattr(chat, "listed_models") else None
    where = getattr(chat, "url", "the server")
    if listed is None:
        return Check("model", "skip", f"{where} does not list its models")
    names = {n.removesuffix(":latest") for n in listed}
    if chat.model.removesuffix(":latest") in names:
        return Check("model", "ok", f"{where} serves {chat.model}")
    shown = ", ".join(sorted(listed)[:8]) or "(none)"
    fix = (
        f"`ollama pull {chat.model}`, or set llm.model to one of: {shown}"
        if chat.provider == "ollama"
        else f"set llm.model to one of the models the server serves: {shown}"
    )
    return Check("model", "fail", f"{where} does not serve {chat.model!r}", fix, 5)


def _structured(chat: ChatModel) -> tuple[Check, Check | None]:
    """A reply constrained to the Probe schema; and the tokens per second it showed."""
    from memcli.llm.structured import ask_structured

    started = time.perf_counter()
    result = ask_structured(chat, PROBE, Probe, max_reasks=1)
    seconds = time.perf_counter() - started
    formats = getattr(chat, "formats", None)
    form = formats.current if formats is not None else "native"
    constrained = formats is None or formats.constrained
    speed = None
    if result.completion_tokens:
        rate = result.completion_tokens / seconds
        speed = Check(
            "speed", "ok",
            f"{rate:.1f} reply tokens/s ({result.prompt_tokens} prompt + "
            f"{result.completion_tokens} reply tokens in {seconds:.2f} s, all told)",
            data={"tokens_per_second": round(rate, 2), "seconds": round(seconds, 3)},
        )  # fmt: skip
    if result.value is None:
        error = ModelOutputInvalid(
            f"{chat.provider}:{chat.model} did not fit a one-field JSON schema ({result.error})",
            fix="use a model that follows JSON instructions (llm.model)",
        )
        return _failed("structured output", error), speed
    if not constrained:
        return Check(
            "structured output", "warn",
            f"valid, but the server does not constrain replies to a schema (sent as {form})",
            "expect re-asks; llama.cpp, vLLM, Ollama 0.5+ and OpenAI take a JSON schema",
            data={"form": form, "outcome": result.outcome},
        ), speed  # fmt: skip
    detail = f"valid ({result.outcome.replace('_', ' ')}), schema sent as {form}"
    return Check("structured output", "ok", detail, data={"form": form}), speed


def _window(chat: Any) -> Check:
    window = chat.window() if hasattr(chat, "window") else None
    if window is None:
        return Check("context", "skip", "this provider does not report a window")
    info = window.describe()
    detail = (
        f"{window.context} tokens ({window.source}): prompts up to about "
        f"{window.prompt_budget}, replies up to {window.reply}"
    )
    if window.source == "default":
        fix = "set llm.context_length to the window the server runs with"
        return Check("context", "warn", detail + "; the server does not say", fix, data=info)
    return Check("context", "ok", detail, data=info)


def check_llm(cfg: Config, create: Callable[[Any], ChatModel | None], report: DoctorReport) -> None:
    """The LLM checks: configured, model listed, structured reply, window, speed."""
    if cfg.llm.provider == "none":
        report.add(Check(
            "llm", "warn", "no LLM (llm.provider: none): consolidate runs its no-LLM stages, "
            "ask needs --context-only",
            "set llm.provider (ollama or openai), llm.model and llm.url",
        ))  # fmt: skip
        return
    try:
        chat = create(cfg.llm)
    except MemcliError as exc:
        report.add(_failed("llm", exc))
        return
    assert chat is not None
    report.add(Check("llm", "ok", f"{chat.provider}:{chat.model}"))
    where = getattr(chat, "url", "the server")
    try:
        listed = _model_listed(chat)
    except MemcliError as exc:
        report.add(_failed("reachable", exc))
        return
    if listed.status == "fail":  # it answered the listing, so it is reachable
        report.add(Check("reachable", "ok", f"{where} answered"))
        report.add(listed)
        return
    try:
        structured, speed = _structured(chat)
    except MemcliError as exc:
        report.add(_failed("reachable", exc))
        return
    report.add(Check("reachable", "ok", f"{where} answered"))
    if listed.status == "skip":
        listed = Check("model", "ok", f"{chat.model} answered (the server lists no models)")
    for check in (listed, structured, _window(chat), speed):
        if check is not None:
            report.add(check)


def run_doctor(
    cfg: Config,
    *,
    create_embedder: Callable[[Any], Embedder | None] | None = None,
    create_chat: Callable[[Any], ChatModel | None] | None = None,
) -> DoctorReport:
    """Check the configured models (the factories default to memcli.llm's)."""
    from memcli import llm

    report = DoctorReport()
    embedding, embedder = check_embedder(cfg, create_embedder or llm.create_embedder)
    report.add(embedding)
    check_llm(cfg, create_chat or llm.create_chat, report)
    store = check_store(cfg)
    if store is not None:
        report.add(store)
    readable = store is None or store.status == "ok"
    model = check_store_model(cfg) if readable else None
    if model is not None:
        report.add(model)
    if embedder is not None and readable and (model is None or model.status != "fail"):
        report.add(check_vectors(cfg, embedder))
    return report
