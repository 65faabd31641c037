"""`memcli add`: one memory from text, stored like an ingested turn.

The text becomes an episode of a source named by `source` (default "memcli-add"), so it is
found, consolidated and forgotten (`prune --source NAME`) like the turns of an ingested file.
Without a time it is dated now; without a session it joins the source's session of that day
("memcli-add:2024-05-03"), so a day's notes form one conversation for consolidation.
"""

from __future__ import annotations

import hashlib
import time as clock
from datetime import date, datetime, timezone
from typing import TYPE_CHECKING, BinaryIO

from memcli import dates
from memcli.errors import InvalidInput, UsageError
from memcli.models import AddReport, Episode, node_public_id
from memcli.ops.ingest import plan_sources, store_plans
from memcli.progress import NoProgress
from memcli.readers import Source
from memcli.readers.jsonl import MAX_TEXT_BYTES, limit_text

if TYPE_CHECKING:
    from memcli.ops.base import MemoryBase

DEFAULT_SOURCE = "memcli-add"
SOURCE_FORMAT = "add"


def _label(value: str | None, what: str, default: str | None = None) -> str | None:
    """A role, session or source name: stripped, and never blank when given."""
    if value is None:
        return default
    label = value.strip()
    if not label:
        raise UsageError(f"{what} must not be empty", fix=f"leave {what} out, or give a name")
    return label


def _when(value: str | datetime | date | None, now: datetime) -> tuple[str, str]:
    """(ISO time, the time as given) of the memory; now when no time is given."""
    if value is None:
        stamp = now.astimezone(timezone.utc).replace(microsecond=0, tzinfo=None).isoformat()
        return stamp, stamp
    if isinstance(value, (datetime, date)):
        value = value.isoformat()
    iso = dates.normalize(value)
    if iso is None:
        raise UsageError(
            f"--time expects a date or date-time, got {value!r}",
            fix="e.g. --time 2024-05-03, --time '2024-05-03 14:30' or a Unix time",
        )
    return iso, value


_LIMIT_FIX = (
    "split it into smaller memories, or raise ingest.max_message_bytes (in the config "
    "file, or the environment variable MEMCLI_INGEST_MAX_MESSAGE_BYTES)"
)
_SLACK = 5  # bytes read past the limit: a byte-order mark and a final CR LF are not text


def check_text(text: str, limit: int = MAX_TEXT_BYTES) -> None:
    """InvalidInput for text that cannot be a memory: blank, over the limit, or not text."""
    if not text.strip():
        raise InvalidInput(["the text to remember is empty"], fix="pass some text, or - for stdin")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(
            [f"the text to remember is not valid Unicode (a lone surrogate at {exc.start})"]
        ) from None
    if size > limit:
        problem = f"the text to remember is {size} bytes, over the {limit_text(limit)} limit"
        raise InvalidInput([problem], fix=_LIMIT_FIX)


def read_text(stream: BinaryIO, name: str = "<stdin>", limit: int = MAX_TEXT_BYTES) -> str:
    """A memory's text from a byte stream: UTF-8, without the trailing line breaks; read
    only up to the limit (an endless stream is refused, not held)."""
    raw = stream.read(limit + _SLACK)
    if len(raw) == limit + _SLACK:
        problem = f"{name}: the text to remember is over the {limit_text(limit)} limit"
        raise InvalidInput([problem], fix=_LIMIT_FIX)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            [f"{name}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})"],
            fix="convert it first, e.g. iconv -f latin1 -t utf-8",
        ) from None
    return text.rstrip("\r\n")


def source_sha(label: str) -> str:
    """The identity of an `add` source: one per name, whatever text it holds."""
    return hashlib.sha256(f"memcli add\0{label}".encode()).hexdigest()


def add(
    mem: MemoryBase,
    text: str,
    *,
    role: str | None = None,
    session: str | None = None,
    time: str | datetime | date | None = None,
    source: str | None = None,
    now: datetime | None = None,
    allow_forgotten: bool = False,
) -> AddReport:
    """Store `text` as one episode; adding the same text, role, session and time again
    stores nothing new, and nothing at all when `prune` forgot it (unless
    `allow_forgotten`)."""
    started = clock.perf_counter()
    check_text(text, mem.cfg.ingest.max_message_bytes)
    speaker = _label(role, "--role")
    label = _label(source, "--source", DEFAULT_SOURCE) or DEFAULT_SOURCE
    iso, raw = _when(time, now or datetime.now(timezone.utc))
    chosen = _label(session, "--session", f"{label}:{iso[:10]}") or label
    mem.check_embedder()
    episode = Episode(text=text, speaker=speaker, session=chosen, timestamp=iso, timestamp_raw=raw)
    plans = plan_sources([Source(label, source_sha(label), SOURCE_FORMAT, [episode])])
    report = store_plans(mem, plans, NoProgress(), started, allow_forgotten)
    if report.forgotten:
        return AddReport(None, False, chosen, iso, label, forgotten=True)
    node = mem.store.ids_for_keys(mem.space, "episode", plans[0].keys)[0]
    return AddReport(node_public_id("episode", node), report.new > 0, chosen, iso, label)
