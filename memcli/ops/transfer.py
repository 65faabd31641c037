"""`memcli export` / `memcli import`: a space as portable JSON Lines, and back.

The format is memcli.ops.dump's; what an import adds is decided in memcli.ops.import_plan.
Vectors are left out of an export unless asked for: an import embeds the memories again with
the embedder it is configured with (which is also how a space moves to another model), or
takes the file's vectors when they were made by that same embedder.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from memcli.consolidate.words import embed_words
from memcli.errors import DatabaseError, InvalidInput, NotFound
from memcli.llm.embedder import embed_all
from memcli.models import Turn, embedding_text, node_public_id, turn_embedding_text
from memcli.ops import dump as fmt
from memcli.ops.entity import restore_profiles
from memcli.ops.import_plan import Plan, edge_rows, make_plan, node_rows
from memcli.progress import NoProgress, Progress
from memcli.store.base import chunked, now_iso

if TYPE_CHECKING:
    from memcli.ops.base import MemoryBase
    from memcli.store import Store


def _write(out: TextIO, record: dict[str, Any]) -> None:
    import json

    out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")


def _header(mem: MemoryBase, with_vectors: bool) -> dict[str, Any]:
    store = mem.store
    dim = store.vector_dim()
    return {
        "record": fmt.HEADER,
        "format": fmt.FORMAT,
        "space": mem.space,
        "schema": store.schema_version(),
        "memcli": version("memcli"),
        "exported_at": now_iso(),
        "embedding": {"identity": mem.stored_identity(), "dim": dim},
        "vectors": fmt.VECTOR_ENCODING if with_vectors else None,
    }


def _node_records(
    store: Store, space: str, with_vectors: bool
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The node records of a space, and each node's public id by row id."""
    import numpy as np

    links, marks = store.space_source_links(space), store.space_marks(space)
    records, public = [], {}
    rows = list(store.space_node_rows(space))
    for part in chunked(rows):
        vectors = store.get_vectors([row["id"] for row in part])
        for row in part:
            public[row["id"]] = node_public_id(row["kind"], row["id"])
            vector = vectors.get(row["id"])
            record = {"record": "node", **{k: v for k, v in row.items() if k != "space"}}
            record.update(
                id=public[row["id"]], props=_json(row["props"]), sources=links.get(row["id"], []),
                processed=marks.get(row["id"], []), embedded=vector is not None,
            )  # fmt: skip
            if with_vectors and vector is not None:
                record["vector"] = fmt.encode_vector(np.asarray(vector, dtype="<f4").tobytes())
            records.append(record)
    return records, public


def _json(text: str | None) -> Any:
    import json

    return json.loads(text) if text else {}


def export_space(mem: MemoryBase, out: TextIO, *, vectors: bool = False) -> dict[str, int]:
    """Write the space as a dump to `out`, from one consistent snapshot; return the counts."""
    store, space = mem.store, mem.space
    with store.reading():
        _write(out, _header(mem, vectors))
        sources = store.space_sources(space)
        for row in sources:
            _write(out, {"record": "source", **{k: v for k, v in row.items() if k != "space"}})
        nodes, public = _node_records(store, space, vectors)
        for record in nodes:
            _write(out, record)
        edges = 0
        for row in store.space_edge_rows(space):
            ends = {"src": public[row["src"]], "dst": public[row["dst"]]}
            _write(out, {"record": "edge", **row, **ends, "props": _json(row["props"])})
            edges += 1
        for word, blob in store.word_vector_rows(space):
            vector = {"vector": fmt.encode_vector(blob)} if vectors else {}
            _write(out, {"record": "word", "word": word, **vector})
        forgotten = store.forgotten_rows(space)
        for key, when in forgotten:
            _write(out, {"record": "forgotten", "key": key, "forgotten_at": when})
    counts = {"sources": len(sources), "nodes": len(nodes), "edges": edges}
    counts["forgotten"] = len(forgotten)
    _write(out, {"record": "end", **counts})
    return counts


def export_file(mem: MemoryBase, path: str, *, vectors: bool = False) -> dict[str, int]:
    """Write the dump to a file (gzip-compressed when its name ends in .gz), readable by its
    owner only; a failed export leaves no file behind. A device, a FIFO or the caller's
    stdout is written into instead (memcli.ops.outfile)."""
    import gzip
    import io

    from memcli.ops.outfile import replacing_output

    try:
        with replacing_output(path) as raw:
            packed = (
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if path.endswith(".gz") else None
            )
            with io.TextIOWrapper(packed or raw, encoding="utf-8", newline="\n") as out:
                counts = export_space(mem, out, vectors=vectors)
            if packed is not None:
                packed.close()
    except OSError as exc:
        raise _cannot_write(path, exc) from None
    return counts


def _cannot_write(path: str, exc: OSError) -> NotFound:
    reason = "it is a directory" if isinstance(exc, IsADirectoryError) else exc.strerror or exc
    return NotFound(
        f"cannot write {path}: {reason}",
        fix="pass -o a file path in an existing directory you can write to",
    )


@dataclass
class ImportReport:
    """What one `import` added (or, in a dry run, would add)."""

    file: str
    from_space: str | None
    space: str
    dry_run: bool = False
    new: dict[str, int] = field(default_factory=dict)  # kind -> nodes added
    existing: dict[str, int] = field(default_factory=dict)  # kind -> nodes already there
    left_out: int = 0  # derived nodes not imported (--episodes-only)
    edges: int = 0
    sources: int = 0
    ids: str = "kept"  # or "renumbered"
    embedded: int = 0  # vectors made by the configured embedder
    vectors_from_file: int = 0
    words_embedded: int = 0  # words of the new turns embedded (the file had no vector)
    forgotten: int = 0  # turns the space had forgotten, left out
    forgotten_derived: int = 0  # memories derived only from those, left out
    tombstones: int = 0  # tombstones of forgotten turns the file brought
    restored: int = 0  # forgotten turns imported as asked (allow_forgotten)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.new.values())

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 3)}


def _vectors(
    mem: MemoryBase, dump: fmt.Dump, plan: Plan, rows: list[dict[str, Any]], progress: Progress
) -> tuple[list[tuple[int, str, Any]], int, int]:
    """(target id, kind, vector) for the new nodes that had a vector, from the file when the
    configured embedder made them, else embedded now (a turn with the turn before it, as
    ingest embeds it); and how many came each way."""
    made_by = (dump.header.get("embedding") or {}).get("identity") or ""
    if made_by.startswith("local:"):  # `auto` keeps the model of the file's vectors
        mem.choose_embedding((), model=made_by.partition(":")[2])
    else:
        mem.choose_embedding(r["text"] for r in rows if r["kind"] == "episode")
    embedder = mem.embedder
    if embedder is None:
        return [], 0, 0
    wanted = [r for r in rows if r["embedded"]]
    same = _same_embedder(mem, dump)
    given = [r for r in wanted if same and r["vector"] is not None]
    todo = [r for r in wanted if not (same and r["vector"] is not None)]
    out = [(r["id"], r["kind"], _floats(r["vector"])) for r in given]
    if todo:
        progress.start("embedding memories", len(todo))
        befores = _turns_before(dump, plan)
        texts = [
            turn_embedding_text(r["text"], r["speaker"], befores.get(r["id"]))
            if r["kind"] == "episode"
            else embedding_text(r["text"], r["speaker"])
            for r in todo
        ]
        made = embed_all(embedder, texts, progress.advance)
        progress.finish()
        out += [(r["id"], r["kind"], v) for r, v in zip(todo, made, strict=True)]
    return out, len(todo), len(given)


def _turns_before(dump: fmt.Dump, plan: Plan) -> dict[int, Turn]:
    """Target id -> the turn before it in the file's session chain (its NEXT edge)."""
    out: dict[int, Turn] = {}
    for edge in dump.edges:
        src, dst = dump.nodes.get(edge["src"]), plan.ids.get(edge["dst"])
        if edge["type"] == "NEXT" and src is not None and dst is not None:
            out[dst] = (src["text"], src.get("speaker"))
    return out


def _same_embedder(mem: MemoryBase, dump: fmt.Dump) -> bool:
    """Whether the file's vectors were made by the embedder this store is configured with."""
    return (dump.header.get("embedding") or {}).get("identity") == mem.embedder_identity()


def _floats(blob: bytes) -> Any:
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


def _marks(dump: fmt.Dump, plan: Plan) -> dict[str, list[int]]:
    """Stage -> target ids of the imported nodes that stage had consumed."""
    out: dict[str, list[int]] = {}
    for row, node in dump.nodes.items():
        if row in plan.ids:
            for stage in node["processed"]:
                out.setdefault(stage, []).append(plan.ids[row])
    return out


def _write_plan(
    mem: MemoryBase, dump: fmt.Dump, plan: Plan, rows: list[dict[str, Any]], vectors: list[Any]
) -> tuple[int, int]:
    """Write the planned rows in one transaction; return (new edges, new sources)."""
    store, space = mem.store, mem.space
    sources: dict[int, int] = {}
    for sid, target in plan.sources.items():
        sources[sid] = store.put_source_row(space, dump.sources[sid]) if target is None else target
    store.put_node_rows(space, rows)
    edges = store.put_edge_rows(space, edge_rows(dump, plan))
    store.link_sources(
        (plan.ids[row], sources[s]) for row, node in dump.nodes.items() if row in plan.ids
        for s in node["sources"]
    )  # fmt: skip
    if plan.with_marks:
        for stage, ids in _marks(dump, plan).items():
            store.mark_processed(space, stage, ids)
    dim = len(vectors[0][2]) if vectors else None
    if dim:
        store.ensure_vectors(dim)
        store.put_vectors((nid, space, kind, vec) for nid, kind, vec in vectors)
    mem.record_embedder(dim)
    store.put_forgotten(space, plan.tombstones)
    store.allow_again(space, plan.restored)
    return edges, sum(1 for t in plan.sources.values() if t is None)


def _store_plan(
    mem: MemoryBase,
    dump: fmt.Dump,
    plan: Plan,
    rows: list[dict[str, Any]],
    report: ImportReport,
    progress: Progress,
) -> None:
    """Embed what needs it, then write the plan in one transaction, unless another writer
    changed the space since the plan was made."""
    store, space = mem.store, mem.space
    before = (store.max_node_id(), store.count_space_nodes(space))
    vectors, report.embedded, report.vectors_from_file = _vectors(mem, dump, plan, rows, progress)
    with store.transaction():
        if (store.max_node_id(), store.count_space_nodes(space)) != before:
            raise DatabaseError(
                "the store changed while the import was being prepared; nothing was written",
                fix="run the import again",
            )
        report.edges, report.sources = _write_plan(mem, dump, plan, rows, vectors)
        # An entity's vector is a profile of its mentions, not of its name alone: made again
        # from the memories' vectors when they were embedded here.
        if report.embedded:
            entities = {i for i, kind, _ in vectors if kind == "entity"}
            restore_profiles(mem, dict.fromkeys(entities, space))
        if _same_embedder(mem, dump):
            given = [(w, _floats(v)) for w, v in dump.words.items() if v is not None]
            store.put_word_vectors(space, given)
    if mem.embedder is not None:  # the words the file brought no vector for
        # Only the words the exported space had embedded: a store that was only ingested
        # has none, and embedding them here would make the copy find other related words.
        among = list(dump.words) if dump.lists_words else None
        report.words_embedded = embed_words(
            store, space, mem.embedder, mem.record_embedder, progress, among=among
        )


def _check_columns(store: Store, dump: fmt.Dump) -> None:
    """Refuse a dump whose nodes or edges carry attributes this store has no column for
    (written by a newer memcli): importing it would drop them."""
    for table, records in (("nodes", dump.nodes.values()), ("edges", dump.edges)):
        known = set(store.exported_columns(table)) | fmt.RECORD_FIELDS[table]
        extra = sorted({name for record in records for name in record} - known)
        if extra:
            raise InvalidInput(
                [f"{dump.name}: its {table} carry fields this memcli does not store: "
                 f"{', '.join(extra)}; importing would lose them"],
                fix="upgrade memcli (pip install -U memcli), then import again",
            )  # fmt: skip


def import_dump(
    mem: MemoryBase,
    path: str,
    *,
    episodes_only: bool,
    dry_run: bool,
    stdin: BinaryIO | None,
    progress: Progress | None,
    allow_forgotten: bool = False,
) -> ImportReport:
    """Add a dump's memories to the space; everything is checked before anything is written
    (the defaults are `Memory.import_dump`'s)."""
    from memcli.readers import read_lines

    started = time.perf_counter()
    progress = progress or NoProgress()
    limit = mem.cfg.ingest.max_document_bytes  # a record is one JSON document
    with read_lines(path, stdin, limit) as (name, lines):
        dump = fmt.parse_dump(name, lines, limit)
    mem.check_embedder()
    store, space = mem.store, mem.space
    _check_columns(store, dump)
    plan = make_plan(store, space, dump, episodes_only, allow_forgotten)
    rows = node_rows(dump, plan)
    report = ImportReport(name, dump.header.get("space"), space, dry_run)
    report.forgotten, report.forgotten_derived = len(plan.forgotten), len(plan.forgotten_derived)
    report.tombstones, report.restored = len(plan.tombstones), len(plan.restored)
    for row in rows:
        report.new[row["kind"]] = report.new.get(row["kind"], 0) + 1
    report.existing, report.left_out = plan.existing(dump), plan.left_out
    report.ids = "kept" if plan.kept_ids else "renumbered"
    if dry_run:
        fresh = {plan.ids[row] for row in plan.new}
        planned = edge_rows(dump, plan)
        report.edges = sum(1 for e in planned if e["src"] in fresh or e["dst"] in fresh)
        report.sources = sum(1 for t in plan.sources.values() if t is None)
    else:
        _store_plan(mem, dump, plan, rows, report, progress)
    report.seconds = time.perf_counter() - started
    return report
