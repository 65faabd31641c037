"""The memcli error tree. Each class carries the exit code the CLI maps it to."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class MemcliError(Exception):
    """Base of every error the library raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return self.message if not self.fix else f"{self.message}\n  fix: {self.fix}"


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: unwound like Ctrl-C (work in flight rolled back, runs marked
    interrupted), but reported as terminated."""


class UsageError(MemcliError):
    """The command line itself is wrong (conflicting or missing options)."""

    exit_code = 2


class ConfigError(MemcliError):
    """Bad YAML, unknown provider or strategy, missing prompt placeholder."""

    exit_code = 3


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """The hint ` (did you mean 'x'?)` naming the choice closest to a misspelt name, or ''."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class LLMNotConfigured(ConfigError):
    """An operation needs a chat model but `llm.provider` is `none`."""


class NotFound(MemcliError):
    """A node id, space, session or input path does not exist."""

    exit_code = 4


class NodeNotFound(NotFound):
    def __init__(self, node_id: str, space: str | None = None) -> None:
        where = f"space {space!r}" if space is not None else "this space"
        super().__init__(
            f"no node {node_id!r} in {where}",
            fix="find ids with `memcli list` (`memcli list --grep WORD` searches the text), "
            "or pass --space",
        )


class InvalidInput(MemcliError):
    """Input data could not be read; `problems` holds `file:line: reason` strings, the
    first of `total` problems (default: all of them) when there were too many to keep."""

    exit_code = 4

    def __init__(self, problems: list[str], fix: str | None = None, total: int = 0) -> None:
        shown = problems[:10]
        more = max(total, len(problems)) - len(shown)
        message = "\n".join(shown) + (f"\n... and {more:,} more problems" if more > 0 else "")
        super().__init__(message, fix=fix)
        self.problems = problems
        self.total = max(total, len(problems))


class ProviderUnreachable(MemcliError):
    """A model server refused the connection, timed out or answered with an HTTP error."""

    exit_code = 5


class ModelOutputInvalid(MemcliError):
    """A model's replies stayed invalid after every retry."""

    exit_code = 6


class WorkLeftPending(MemcliError):
    """A consolidation run finished, but failed model calls left work for the next run."""

    exit_code = 8


class DatabaseError(MemcliError):
    """The store is locked too long, has a newer schema, or sqlite-vec will not load."""

    exit_code = 7


class DiskFull(DatabaseError):
    """The file system holding the store has no room left for a write; the write was rolled
    back whole, so the store is as it was before it."""

    exit_code = 9

    def __init__(self, path: object, what: str | None = None) -> None:
        what = what or "the last write was not stored (the store is as it was before it)"
        super().__init__(
            f"the disk holding {path} is full: {what}",
            fix="free space on that disk, or move the store (with its -wal file, if there "
            "is one) to a disk with room and pass --db the new path; then run the command "
            "again (an ingest stores what is missing)",
        )


class ReadOnlyStore(DatabaseError):
    """A write to a store this process may only read."""

    def __init__(self, path: object, reason: str, fix: str | None = None) -> None:
        super().__init__(
            f"{path} is read-only here ({reason}): memcli can read it but not change it",
            fix=fix
            or "ask, inspect and list work on it as it is; to write, copy it somewhere "
            f"writable (cp {path} ~/memory.db) and pass --db the copy, or get write access "
            "to the file and its directory",
        )


class EmbeddingMismatch(DatabaseError):
    """The configured embedder differs from the one the store's vectors were made with:
    vectors of two models cannot be compared, nor mixed in one store."""

    exit_code = 3

    def __init__(
        self,
        stored: str,
        configured: str,
        *,
        reindexed: int | None = None,
        lexical: bool = False,
    ) -> None:
        self.stored, self.configured = stored, configured
        told = " (embeddings off)" if stored == "none" else ""
        message = (
            f"this store was embedded with {stored}{told}, but the configuration asks for "
            f"{configured}: vectors of two models cannot be compared"
        )
        if reindexed is not None:
            message += (
                f"; a reindex to {configured} embedded {reindexed:,} nodes and was stopped "
                "before it could swap them in"
            )
        finish = "finish that reindex" if reindexed is not None else "re-embed the store"
        fix = (
            f"run `memcli reindex` to {finish} with {configured} (it shows progress; if "
            f"stopped, the next run resumes), or {set_back(stored, configured)} to use the "
            "store as it is"
        )
        if configured == "none":
            fix = (
                f"{set_back(stored, configured)} to use the store as it is, or run `memcli "
                "reindex` to drop its vectors and keep the full text alone"
            )
        if lexical:
            fix += "; `--strategy lexical` asks the full text alone meanwhile"
        super().__init__(message, fix=fix)


def set_back(stored: str, configured: str) -> str:
    """How to configure the embedder `stored` (provider:model) again, said briefly."""
    provider, _, model = stored.partition(":")
    if stored == "none":
        return "set embedding.provider back to none"
    if configured.partition(":")[0] == provider:
        return f"set embedding.model back to {model}"
    return f"set embedding.provider back to {provider} and embedding.model to {model}"


def damaged_store(exc: BaseException) -> DatabaseError | None:
    """SQLite's report that the store file is damaged (a corrupted page, a file that is
    not a database) as the DatabaseError that says what to do; None for anything else."""
    if isinstance(exc, MemcliError):
        return None
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc)
    damaged = name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or (
        type(exc).__name__ == "DatabaseError" and ("malformed" in text or "not a database" in text)
    )
    if not damaged:
        return None
    return DatabaseError(
        f"the store file is damaged ({text}): memcli cannot read part of it",
        fix="restore it from a backup (or import a `memcli export` dump into a new --db); "
        "`memcli doctor` shows what is damaged (with the SQLite memcli uses: an older "
        "sqlite3 may call a healthy store damaged), and `memcli export` may still save what "
        "can be read",
    )
