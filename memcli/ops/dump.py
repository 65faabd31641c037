"""The memcli export format: JSON Lines, one record per line, format version 3.

    {"record": "memcli-export", "format": 3, "space", "schema", "memcli", "exported_at",
     "embedding": {"identity", "dim"}, "vectors": null | "float32-le-base64"}
    {"record": "source", "id", "path", "sha256", "format", "episodes", "ingested_at"}   ...
    {"record": "node", "id": "ep12", "kind", "text", "speaker", "session", "seq",
     "timestamp", "ref", "belief", "status", "key", "props", "created_at",
     "sources": [source ids], "processed": [stages], "embedded": bool, "vector"?}         ...
    {"record": "edge", "src": "ep12", "dst": "sg40", "type", "weight", "props",
     "created_at"}                                                                          ...
    {"record": "word", "word": "garden", "vector"?}     (each embedded word; vector: with vectors)
    {"record": "forgotten", "key", "forgotten_at"}      (a tombstone: a pruned turn's key)  ...
    {"record": "end", "sources": n, "nodes": n, "edges": n, "forgotten": n}

Node and edge records carry every column of their table, so attributes that later schema
migrations add travel without a format change; an import refuses a record with a field its
store has no column for (it would be lost), and a format number above its own. The
end record is how a cut-short file is told from a whole one. Word records name the words of
the space's turns that have a vector (memcli.store.words), so an import embeds those and
no others and the copy finds the same related words. Format 1 (read as well) had no word
records and format 2 wrote them only with the vectors: an import of those embeds every word.
Forgotten records (format 3) carry the space's tombstones (memcli.store.prune): content
keys of turns `prune` removed, no text, so a restored space keeps them forgotten.
This
module builds records and reads a dump back, checking every record before the caller writes
anything.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from memcli.errors import InvalidInput
from memcli.models import EDGE_TYPES, parse_node_id
from memcli.readers.jsonl import limit_text
from memcli.readers.stream import Oversize

FORMAT = 3
HEADER = "memcli-export"
VECTOR_ENCODING = "float32-le-base64"
MAX_PROBLEMS_KEPT = 1000  # a file of a million bad records costs no more to report
NOT_A_DUMP_FIX = (
    "import reads files written by `memcli export`; to store conversations, use "
    "`memcli ingest FILE`"
)

_TEXT, _NUMBER, _INT = (str,), (int, float), (int,)
_MAYBE_TEXT, _MAYBE_NUMBER, _MAYBE_INT = (str, None), (int, float, None), (int, None)
SPECS: dict[str, dict[str, tuple[Any, ...]]] = {
    "source": {"id": _INT, "path": _TEXT, "sha256": _TEXT, "format": _TEXT,
               "episodes": _INT, "ingested_at": _TEXT},
    "node": {"id": _TEXT, "kind": _TEXT, "text": _TEXT, "speaker": _MAYBE_TEXT,
             "session": _MAYBE_TEXT, "seq": _MAYBE_INT, "timestamp": _MAYBE_TEXT,
             "ref": _MAYBE_TEXT, "belief": _MAYBE_NUMBER, "status": _MAYBE_TEXT,
             "key": _MAYBE_TEXT, "props": (dict,), "created_at": _TEXT, "sources": (list,),
             "processed": (list,), "embedded": (bool,), "vector": (str, None, ...)},
    "edge": {"src": _TEXT, "dst": _TEXT, "type": _TEXT, "weight": _NUMBER, "props": (dict,),
             "created_at": _TEXT},
    "word": {"word": _TEXT, "vector": (str, None, ...)},
    "forgotten": {"key": _TEXT, "forgotten_at": _TEXT},
    "end": {"sources": _INT, "nodes": _INT, "edges": _INT, "forgotten": (int, ...)},
}  # fmt: skip

# Fields of node and edge records that are not columns of the nodes and edges tables.
RECORD_FIELDS = {
    "nodes": {"record", "sources", "processed", "embedded", "vector"},
    "edges": {"record"},
}


def encode_vector(blob: bytes) -> str:
    """A stored float32 vector as text."""
    return base64.b64encode(blob).decode("ascii")


def _type_problem(value: Any, allowed: tuple[Any, ...]) -> bool:
    if value is None:
        return None not in allowed
    if isinstance(value, bool):
        return bool not in allowed
    if isinstance(value, float) and not math.isfinite(value):
        return True
    return not isinstance(value, tuple(t for t in allowed if isinstance(t, type)))


def field_problem(record: dict[str, Any], kind: str) -> str | None:
    """The first missing or mistyped field of a record of this kind, or None."""
    for name, allowed in SPECS[kind].items():
        if name not in record:
            if ... in allowed:  # optional
                continue
            return f"{kind} record without '{name}'"
        if _type_problem(record[name], allowed):
            return f"{kind} record: '{name}' cannot be {json.dumps(record[name])[:40]}"
    return None


@dataclass
class Dump:
    """A checked dump: its header, and its records keyed and typed for writing."""

    name: str
    header: dict[str, Any]
    sources: dict[int, dict[str, Any]] = field(default_factory=dict)  # by id in the dump
    nodes: dict[int, dict[str, Any]] = field(default_factory=dict)  # by row id in the dump
    edges: list[dict[str, Any]] = field(default_factory=list)  # src/dst as row ids
    words: dict[str, bytes | None] = field(default_factory=dict)  # word -> its vector, if given
    forgotten: dict[str, str] = field(default_factory=dict)  # turn key -> when it was forgotten

    @property
    def dim(self) -> int | None:
        """Dimension of the vectors the dump's space was embedded with."""
        dim = (self.header.get("embedding") or {}).get("dim")
        return dim if isinstance(dim, int) and not isinstance(dim, bool) else None

    @property
    def lists_words(self) -> bool:
        """Whether the word records name every embedded word (format 3 on), vector or not."""
        return int(self.header.get("format") or 0) >= 3


class _Reader:
    """Checks a dump record by record, collecting `name:line: reason` problems."""

    def __init__(self, name: str) -> None:
        self.dump = Dump(name, {})
        self.problems: list[str] = []  # the first MAX_PROBLEMS_KEPT
        self.count = 0  # every problem
        self.keys: set[tuple[str, str]] = set()
        self.end: dict[str, Any] | None = None

    def problem(self, line: int, reason: str) -> None:
        self.count += 1
        if len(self.problems) < MAX_PROBLEMS_KEPT:
            self.problems.append(f"{self.dump.name}:{line}: {reason}")

    def header(self, line: int, record: Any) -> None:
        if not isinstance(record, dict) or record.get("record") != HEADER:
            self.problem(line, "not a memcli export (its first line is no export header)")
            raise InvalidInput(self.problems, fix=NOT_A_DUMP_FIX)
        version = record.get("format")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            self.problem(line, f"export header with an unreadable format {version!r}")
        elif version > FORMAT:
            self.problem(line, f"format {version} is newer than this memcli reads ({FORMAT})")
            raise InvalidInput(self.problems, fix="upgrade memcli (pip install -U memcli)")
        self.dump.header = record

    def record(self, line: int, record: Any) -> None:
        kind = record.get("record") if isinstance(record, dict) else None
        if self.end is not None:
            self.problem(line, "a record after the end record")
        elif kind not in SPECS:
            self.problem(line, f"unknown record {kind!r}" if kind else "not a record object")
        elif (reason := field_problem(record, kind)) is not None:
            self.problem(line, reason)
        else:
            getattr(self, f"_{kind}")(line, record)

    def _source(self, line: int, record: dict[str, Any]) -> None:
        if record["id"] in self.dump.sources:
            self.problem(line, f"source {record['id']} appears twice")
        self.dump.sources[record["id"]] = record

    def _node(self, line: int, record: dict[str, Any]) -> None:
        parsed = parse_node_id(record["id"])
        if parsed is None or parsed[0] != record["kind"]:
            self.problem(line, f"node id {record['id']!r} does not fit kind {record['kind']!r}")
            return
        row = parsed[1]
        unknown = [s for s in record["sources"] if s not in self.dump.sources]
        key = (record["kind"], record["key"])
        vector = self._vector(record.get("vector"))
        if row in self.dump.nodes:
            self.problem(line, f"node {record['id']} appears twice")
        elif unknown:
            self.problem(line, f"node {record['id']} names unknown sources {unknown}")
        elif record["key"] is not None and key in self.keys:
            self.problem(line, f"two {record['kind']} nodes share the key {record['key']!r}")
        elif not all(isinstance(s, str) for s in record["processed"]):
            self.problem(line, f"node {record['id']}: 'processed' must list stage names")
        elif isinstance(vector, str):
            self.problem(line, f"node {record['id']}: its vector {vector}")
        else:
            self.keys.add(key)
            self.dump.nodes[row] = {**record, "id": row, "vector": vector}

    def _vector(self, text: str | None) -> bytes | str | None:
        """The vector's bytes, None when absent, or why it is unusable."""
        if text is None:
            return None
        try:
            blob = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            blob = b""
        if not self.dump.dim or len(blob) != 4 * self.dump.dim:
            return f"is not {self.dump.dim} floats"
        # One NaN or infinity would poison every similarity search of the space.
        if not all(math.isfinite(x) for x in struct.unpack(f"<{self.dump.dim}f", blob)):
            return "holds NaN or infinity"
        return blob

    def _edge(self, line: int, record: dict[str, Any]) -> None:
        ends = [parse_node_id(record[k]) for k in ("src", "dst")]
        missing = [
            record[k] for k, end in zip(("src", "dst"), ends, strict=True)
            if end is None or end[1] not in self.dump.nodes
        ]  # fmt: skip
        if missing:
            self.problem(line, f"edge to {missing[0]!r}, a node the file does not hold")
        elif record["type"] not in EDGE_TYPES:
            self.problem(line, f"unknown edge type {record['type']!r}")
        else:
            src, dst = (end[1] for end in ends if end is not None)
            self.dump.edges.append({**record, "src": src, "dst": dst})

    def _word(self, line: int, record: dict[str, Any]) -> None:
        vector = self._vector(record.get("vector"))
        if record["word"] in self.dump.words:
            self.problem(line, f"word {record['word']!r} appears twice")
        elif isinstance(vector, str):  # why it is unusable
            self.problem(line, f"word {record['word']!r}: its vector {vector}")
        else:
            self.dump.words[record["word"]] = vector

    def _forgotten(self, line: int, record: dict[str, Any]) -> None:
        if record["key"] in self.dump.forgotten:
            self.problem(line, f"forgotten turn {record['key']!r} appears twice")
        self.dump.forgotten[record["key"]] = record["forgotten_at"]

    def _end(self, line: int, record: dict[str, Any]) -> None:
        self.end = record
        found = {
            "sources": len(self.dump.sources),
            "nodes": len(self.dump.nodes),
            "edges": len(self.dump.edges),
            "forgotten": len(self.dump.forgotten),
        }
        wrong = [k for k, n in found.items() if record.get(k, n) != n]
        if wrong and not self.problems:
            self.problem(line, f"the end record counts {record[wrong[0]]} {wrong[0]}, found "
                         f"{found[wrong[0]]}")  # fmt: skip


def parse_dump(name: str, lines: Iterable[tuple[int, bytes | Oversize]], limit: int) -> Dump:
    """Read and check a dump, one numbered line at a time (blank lines left out, a line
    over `limit` bytes as its Oversize); InvalidInput listing its problems (the first
    MAX_PROBLEMS_KEPT, and how many in all) when it is not sound."""
    reader = _Reader(name)
    first: int | None = None
    last = 1
    for number, raw in lines:
        last = number
        record = _load(reader, number, raw, limit)
        if first is not None:
            if record is not _UNREAD:
                reader.record(number, record)
            continue
        first = number
        if record is _UNREAD:
            problem = f"{name}:{number}: not a memcli export (its first line is not JSON)"
            raise InvalidInput([problem], fix=NOT_A_DUMP_FIX)
        reader.header(number, record)
    if first is None:
        raise InvalidInput([f"{name}:1: the file is empty"], fix=NOT_A_DUMP_FIX)
    if reader.end is None:
        reader.problem(last, "the file ends without its end record: it was cut short")
    if reader.problems:
        raise InvalidInput(
            reader.problems, fix="export the space again, or repair the file", total=reader.count
        )
    return reader.dump


_UNREAD = object()  # a line that is no JSON (its problem is recorded)


def _load(reader: _Reader, number: int, raw: bytes | Oversize, limit: int) -> Any:
    """The JSON value on one line, or _UNREAD with the problem recorded."""
    if isinstance(raw, Oversize):
        reader.problem(number, f"record is {raw.size} bytes, over the {limit_text(limit)} limit "
                       "of one JSON document (ingest.max_document_bytes)")  # fmt: skip
        return _UNREAD
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        reader.problem(number, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
                       f"{exc.start + 1})")  # fmt: skip
    except (json.JSONDecodeError, RecursionError) as exc:
        reader.problem(number, f"invalid JSON: {getattr(exc, 'msg', exc)}")
    return _UNREAD
