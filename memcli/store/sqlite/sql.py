"""Every SQL statement the store runs by hand, and why sqlite-utils does not run it.

- no sqlite-utils call for it: pragmas and write transactions (BEGIN IMMEDIATE), the DDL of
  shipped migrations (in ddl.py), FTS5 and sqlite-vec tables with their MATCH / KNN
  queries, recursive walks, joins, group-bys and unions;
- measured too slow through it on a hot path (ingest, each consolidation unit, each
  question): row inserts and node, kind and edge reads. Each sqlite-utils call lists the
  tables first, insert_all prepares every value in Python, rows_where builds dicts.

Everything else (cold writes and reads) goes through sqlite-utils table methods.
"""

from __future__ import annotations

from collections.abc import Sequence

from memcli.store.nodes import NODE_COLUMNS
from memcli.store.sqlite import ddl

# -- connection and transactions ---------------------------------------------------------


def connection_pragmas(mmap_bytes: int) -> tuple[str, ...]:
    """Pragmas every connection sets after journal_mode: durability, integrity, reading."""
    return (
        "PRAGMA synchronous = NORMAL",
        "PRAGMA foreign_keys = ON",
        "PRAGMA secure_delete = ON",
        # Reads through a memory map instead of SQLite's small page cache: a vector search
        # scans every stored vector, and point lookups of vectors become ~10x cheaper.
        f"PRAGMA mmap_size = {int(mmap_bytes)}",
    )


WAL_MODE = "PRAGMA journal_mode = WAL"
SCHEMA_PROBE = "SELECT count(*) FROM sqlite_master"  # reads the file (and its WAL index)
SCHEMA_NAMES = "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
APPLICATION_ID = "PRAGMA application_id"  # another program's mark, where it sets one
DATABASE_FILE = "PRAGMA database_list"  # row 0: (seq, "main", file path)
META_TABLE = "meta"  # every migrated store has it (the first migration makes it)
WAL_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"
BEGIN_WRITE = "BEGIN IMMEDIATE"  # take the write lock now, not at the first write
BEGIN_READ = "BEGIN"
COMMIT = "COMMIT"
ROLLBACK = "ROLLBACK"
VACUUM = "VACUUM"
USER_VERSION = "PRAGMA user_version"
DATABASE_LIST = "PRAGMA database_list"
DATA_VERSION = "PRAGMA data_version"  # moves when another connection commits
SET_USER_VERSION = "PRAGMA user_version = {:d}"  # pragmas take no bound parameters
BUSY_TIMEOUT = "PRAGMA busy_timeout = {:d}"


# The DDL of the shipped migrations lives in ddl.py: verbatim, never edited.


# -- the per-space full-text tables (FTS5) -----------------------------------------------


# A space's full-text table, as the latest migration that changed it made it. `context`
# holds, for a turn, the opening words of the turns before it in its session
# (memcli.store.sqlite.fts), searched at a lower weight.
create_text_table = ddl.m005_text_table


def set_text_context(table: str) -> str:
    return f"UPDATE {table} SET context = ? WHERE rowid = ?"


# The turns of one session around a range of positions: the `limit` before `seq`, those
# from `seq` to `seq_to`, and the `limit` after `seq_to` (NULL sessions compare by IS).
_TURNS = "SELECT id, seq, text FROM nodes WHERE space = ? AND kind = 'episode' AND session IS ?"
TURNS_BEFORE = f"{_TURNS} AND seq < ? ORDER BY seq DESC, id DESC LIMIT ?"
TURNS_BETWEEN = f"{_TURNS} AND seq BETWEEN ? AND ? ORDER BY seq, id"
TURNS_AFTER = f"{_TURNS} AND seq > ? ORDER BY seq, id LIMIT ?"


def optimize_text_table(table: str) -> str:
    """Merge a full-text table's segments (sqlite-utils' `optimize` spells the command in
    double quotes, which SQLite builds without DQS reject)."""
    return f"INSERT INTO {table} ({table}) VALUES ('optimize')"


def text_search(table: str, kinds: int, context_weight: float) -> str:
    """BM25 through FTS5's `rank` column: ORDER BY rank LIMIT n takes FTS5's top-n path,
    faster on large stores than sorting a computed bm25() expression. Column weights: text
    1, speaker 0.5, (kind, not indexed), the turn's context `context_weight`."""
    return (
        f"SELECT rowid, -rank AS score FROM {table}"
        f" WHERE {table} MATCH ? AND rank MATCH 'bm25(1.0, 0.5, 0.0, {float(context_weight)})'"
        f"{in_params(' AND kind', kinds)} ORDER BY rank LIMIT ?"
    )


def text_search_columns(table: str, kinds: int, context_weight: float) -> str:
    """As `text_search`, the rows ranked alike, with each searched column's own BM25 beside
    the weighted total: the turn's text, its speaker and its context (FTS5 computes them
    for the rows returned only)."""
    return (
        f"SELECT rowid, -rank AS score, -bm25({table}, 1.0, 0.0, 0.0, 0.0),"
        f" -bm25({table}, 0.0, 1.0, 0.0, 0.0), -bm25({table}, 0.0, 0.0, 0.0, 1.0)"
        f" FROM {table}"
        f" WHERE {table} MATCH ? AND rank MATCH 'bm25(1.0, 0.5, 0.0, {float(context_weight)})'"
        f"{in_params(' AND kind', kinds)} ORDER BY rank LIMIT ?"
    )


def speaker_named(table: str) -> str:
    """The speaker of one row whose speaker column matches a word (FTS5 column filter)."""
    return f"SELECT speaker FROM {table} WHERE {table} MATCH ? LIMIT 1"


# -- the vector table (sqlite-vec) -------------------------------------------------------


def create_vector_table(dim: int) -> str:
    return (
        "CREATE VIRTUAL TABLE vec_nodes USING vec0 ("
        " space TEXT PARTITION KEY, kind TEXT,"
        f" embedding FLOAT[{int(dim)}] distance_metric=cosine)"
    )


VECTOR_DELETE = "DELETE FROM vec_nodes WHERE rowid = ?"
VECTOR_INSERT = "INSERT INTO vec_nodes (rowid, space, kind, embedding) VALUES (?, ?, ?, ?)"
# vec0 answers `rowid = ?` from its rowid index but `rowid IN (...)` by scanning every chunk,
# so one query per id is faster at any count (15 ms vs 144 ms for 1,000 ids among 200,000).
VECTOR_GET = "SELECT embedding FROM vec_nodes WHERE rowid = ?"


# The in-process vector index (vector_index.py): the writers' counters, then every vector
# read from sqlite-vec's own storage (its rowid map and vector chunks, five times faster
# than scanning the virtual table), or by that scan when the layout is another version's.
VECTOR_COUNTERS = "SELECT key, value FROM meta WHERE key IN (?, ?)"
VECTOR_PLACES = "SELECT rowid, chunk_id, chunk_offset FROM vec_nodes_rowids"
VECTOR_CHUNKS = "SELECT rowid, vectors FROM vec_nodes_vector_chunks00 ORDER BY rowid"
VECTOR_COUNT = "SELECT count(*) FROM vec_nodes"
VECTOR_ALL = "SELECT rowid, embedding FROM vec_nodes"
# The scan's own distance function, for ranking the index's candidates exactly as it would.
VECTOR_DISTANCE = "SELECT vec_distance_cosine(?, ?)"
NODE_LABELS = "SELECT id, space, kind FROM nodes ORDER BY id"
NODES_AFTER = "SELECT id, space, kind FROM nodes WHERE id > ? AND id <= ? ORDER BY id"


def vector_search(kinds: int) -> str:
    return (
        "SELECT rowid, distance FROM vec_nodes WHERE embedding MATCH ? AND k = ? AND space = ?"
        f"{in_params(' AND kind', kinds)} ORDER BY distance"
    )


# -- row inserts -------------------------------------------------------------------------


def insert(table: str, columns: Sequence[str], conflict: str = "") -> str:
    """One row's INSERT for executemany. Ingest and every consolidation unit write nodes,
    full-text rows, edges, source links and progress marks this way: sqlite-utils'
    insert_all spends more time preparing each value in Python than SQLite spends storing
    it (788 node rows: 11 ms by executemany, 22-25 ms by insert_all), and each of its calls
    first lists the tables and reads the table's columns."""
    verb = f"INSERT OR {conflict}" if conflict else "INSERT"
    return f"{verb} INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


# -- id lists ----------------------------------------------------------------------------


def in_json(column: str) -> str:
    """`column IN` a JSON array bound once as one parameter (no limit on its length)."""
    return f"{column} IN (SELECT value FROM json_each(?))"


def in_params(prefix: str, count: int) -> str:
    """`<prefix> IN (?, ?, ...)` for `count` parameters, or nothing when count is 0."""
    return f"{prefix} IN ({','.join('?' * count)})" if count else ""


# -- nodes -------------------------------------------------------------------------------


# Read on every question and consolidation unit (through rows_where nodes_by_ids was ~1.5x
# and kinds_of ~2x slower).
def nodes_where(where: str, order_by: str | None = None) -> str:
    """NODE_COLUMNS of the nodes meeting `where`, optionally sorted."""
    order = f" ORDER BY {order_by}" if order_by else ""
    return f"SELECT {NODE_COLUMNS} FROM nodes WHERE {where}{order}"


KINDS_OF = f"SELECT id, kind FROM nodes WHERE {in_json('id')} ORDER BY id"
# Where turns sit in their sessions (memcli.store.sqlite.fts indexes a turn with its context).
TURN_PLACES = (
    f"SELECT id, space, session, seq FROM nodes WHERE {in_json('id')}"
    " AND kind = 'episode' AND seq IS NOT NULL"
)
KIND_PRESENT = "SELECT 1 FROM nodes WHERE space = ? AND kind = ? LIMIT 1"
META_GET = "SELECT value FROM meta WHERE key = ?"  # read once per consolidation unit
TEXT_TABLE_ID = "SELECT id FROM fts_spaces WHERE space = ?"
VECTOR_TABLE = "SELECT 1 FROM sqlite_master WHERE name = 'vec_nodes'"


def edges_touching(column: str, types: int) -> str:
    """Edges whose `column` (src or dst) is in a JSON array of ids, optionally of some types."""
    return (
        f"SELECT src, dst, type, weight, props FROM edges WHERE {in_json(column)}"
        f"{in_params(' AND type', types)}"
    )


# The next row id AUTOINCREMENT would give `nodes` (never an id used before).
NEXT_NODE_ID = (
    "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'nodes'), 0),"
    " COALESCE((SELECT MAX(id) FROM nodes), 0)) + 1"
)
SOURCE_PATHS = (
    "SELECT s.path FROM node_sources ns JOIN sources s ON s.id = ns.source"
    " WHERE ns.node = ? ORDER BY s.id"
)
SPACES = "SELECT DISTINCT space FROM nodes ORDER BY 1"
COUNT_KINDS = "SELECT kind, COUNT(*) FROM nodes WHERE space = ? GROUP BY kind ORDER BY kind"
COUNT_EDGE_TYPES = "SELECT type, COUNT(*) FROM edges WHERE space = ? GROUP BY type ORDER BY type"
COUNT_SESSIONS = "SELECT COUNT(DISTINCT session) FROM nodes WHERE space = ? AND kind = 'episode'"
# Sessions by when they began (a session without dates by when it was stored); the index
# nodes_session (space, session, seq) serves the grouping.
SESSIONS_PAGE = (
    "SELECT session, MIN(COALESCE(timestamp, created_at)) AS first,"
    " MAX(COALESCE(timestamp, created_at)) AS last, COUNT(*) AS turns"
    " FROM nodes WHERE space = ? AND kind = 'episode' AND session IS NOT NULL"
    " GROUP BY session ORDER BY first, session LIMIT ? OFFSET ?"
)
EPISODES_OF_SOURCES = f"id IN (SELECT node FROM node_sources WHERE {in_json('source')})"
SESSION_NAMES = (
    "SELECT DISTINCT session FROM nodes WHERE space = ? AND kind = 'episode'"
    " ORDER BY session LIMIT ?"
)


def _walk(towards_origin: Sequence[str], from_origin: Sequence[str] = ()) -> str:
    """A recursive `walk(start, node)` from each id of a JSON array along edges towards
    what it came from (`towards_origin` forwards, `from_origin` backwards)."""
    steps = [
        "SELECT walk.start, e.dst FROM walk JOIN edges e ON e.src = walk.node"
        f" WHERE e.type IN ({_literals(towards_origin)})"
    ]
    if from_origin:
        steps.append(
            "SELECT walk.start, e.src FROM walk JOIN edges e ON e.dst = walk.node"
            f" WHERE e.type IN ({_literals(from_origin)})"
        )
    unions = "".join(f" UNION {step}" for step in steps)
    return f"WITH RECURSIVE walk(start, node) AS (SELECT value, value FROM json_each(?){unions})"


def provenance_walk(towards_origin: Sequence[str], from_origin: Sequence[str]) -> str:
    """(start, episode id, ref) of the episodes each start node came from, oldest first."""
    return (
        f"{_walk(towards_origin, from_origin)}"
        " SELECT walk.start, n.id, n.ref FROM walk JOIN nodes n ON n.id = walk.node"
        " WHERE n.kind = 'episode' AND walk.start != walk.node ORDER BY walk.start, n.id"
    )


def topic_walk(towards_origin: Sequence[str]) -> str:
    """(start, segment id): a node's own topic segments (PART_OF), else those of the turns
    it was derived from, through any chain of derivation edges."""
    return (
        f"{_walk(towards_origin)} SELECT DISTINCT walk.start, e.dst FROM walk"
        " JOIN edges e ON e.src = walk.node WHERE e.type = 'PART_OF'"
    )


def _literals(values: Sequence[str]) -> str:
    return ",".join(repr(v) for v in values)


# -- edges -------------------------------------------------------------------------------


def edge_rows(types: int) -> str:
    """(src, dst, type, weight) of edges touching a JSON array of ids (bound twice)."""
    where = in_params(" AND type", types)
    return (
        f"SELECT src, dst, type, weight FROM edges WHERE {in_json('src')}{where}"
        f" UNION SELECT src, dst, type, weight FROM edges WHERE {in_json('dst')}{where}"
        " ORDER BY 1, 2, 3, 4"
    )


def edges_from(types: int) -> str:
    # Driven by src alone: a (src IN list AND dst IN list) plan probes every pair.
    return (
        f"SELECT src, dst, type, weight FROM edges WHERE {in_json('src')}"
        f"{in_params(' AND type', types)} ORDER BY src, dst, type"
    )


EDGES_INTO = f"SELECT src, dst, type, weight FROM edges WHERE {in_json('dst')}"
EDGE_SET_PROPS = "UPDATE edges SET props = ? WHERE src = ? AND dst = ? AND type = ?"
DEGREES = (
    f"SELECT src, COUNT(*) FROM edges WHERE {in_json('src')} GROUP BY src UNION ALL"
    f" SELECT dst, COUNT(*) FROM edges WHERE {in_json('dst')} GROUP BY dst"
)
EDGE_IDS_TOUCHING = (
    f"SELECT id FROM edges WHERE {in_json('src')} UNION SELECT id FROM edges WHERE {in_json('dst')}"
)
# (src, dst, type, src kind, dst kind) of every edge touching a JSON array of ids.
SUPPORT = (
    "SELECT e.src, e.dst, e.type, a.kind, b.kind FROM edges e"
    " JOIN nodes a ON a.id = e.src JOIN nodes b ON b.id = e.dst"
    f" WHERE {in_json('e.src')}"
    " UNION SELECT e.src, e.dst, e.type, a.kind, b.kind FROM edges e"
    " JOIN nodes a ON a.id = e.src JOIN nodes b ON b.id = e.dst"
    f" WHERE {in_json('e.dst')}"
)

# -- consolidation bookkeeping -----------------------------------------------------------

LAST_RUNS = (
    "SELECT * FROM runs WHERE id IN (SELECT MAX(id) FROM runs WHERE space = ?"
    " GROUP BY stage) ORDER BY id"
)
RUN_EXTRAS = "SELECT extra FROM runs WHERE space = ? AND stage = ?"
RUNS_PAGE = "SELECT * FROM runs WHERE space = ? ORDER BY id DESC LIMIT ? OFFSET ?"
RUNS_COUNT = "SELECT COUNT(*) FROM runs WHERE space = ?"
RUNS_INTERRUPTED = (
    "UPDATE runs SET status = 'interrupted', finished_at = ? WHERE space = ? AND status = 'running'"
)


def run_totals(counters: Sequence[str]) -> str:
    sums = ", ".join(f"COALESCE(SUM({name}), 0)" for name in counters)
    return f"SELECT {sums} FROM runs WHERE space = ?"


PROCESSED_AMONG = f"SELECT node FROM processed WHERE stage = ? AND {in_json('node')}"
UNPROCESSED = (
    "SELECT n.id FROM nodes n WHERE n.space = ? AND n.kind = ? AND NOT EXISTS"
    " (SELECT 1 FROM processed p WHERE p.stage = ? AND p.node = n.id)"
    " ORDER BY n.session, n.seq, n.id"
)
# The model reply cache is written from model threads: single auto-committed statements,
# never sqlite-utils' BEGIN/SAVEPOINT pairs, which must not interleave on a shared connection.
CACHE_GET = "SELECT response, prompt_tokens, completion_tokens FROM llm_cache WHERE key = ?"
CACHE_PUT = (
    "INSERT OR REPLACE INTO llm_cache (key, provider, model, response,"
    " prompt_tokens, completion_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)
CACHE_DELETE = "DELETE FROM llm_cache WHERE key = ?"

# -- the words of turns (words.py) --------------------------------------------------------
WORDS_ADD = (
    "INSERT INTO words (space, word, turns) VALUES (?, ?, ?)"
    " ON CONFLICT (space, word) DO UPDATE SET turns = turns + excluded.turns"
)
WORDS_TAKE = "UPDATE words SET turns = turns - ? WHERE space = ? AND word = ?"
WORDS_DROP_UNUSED = "DELETE FROM words WHERE space = ? AND turns <= 0"
_WORDS_AMONG = "(?2 IS NULL OR word IN (SELECT value FROM json_each(?2)))"
WORDS_UNEMBEDDED = (
    f"SELECT word FROM words WHERE space = ?1 AND vector IS NULL AND {_WORDS_AMONG}"
    " ORDER BY word LIMIT ?3"
)
WORDS_SPACES = "SELECT DISTINCT space FROM words ORDER BY space"
WORDS_UNEMBEDDED_COUNT = (
    f"SELECT count(*) FROM words WHERE space = ?1 AND vector IS NULL AND {_WORDS_AMONG}"
)
WORDS_PUT_VECTOR = "UPDATE words SET vector = ? WHERE space = ? AND word = ?"
WORDS_CLEAR_VECTORS = "UPDATE words SET vector = NULL WHERE vector IS NOT NULL"
WORDS_EMBEDDED = (
    "SELECT word, vector FROM words WHERE space = ? AND vector IS NOT NULL ORDER BY word"
)
WORDS_VECTORS_OF = (
    "SELECT word, vector FROM words WHERE space = ? AND vector IS NOT NULL"
    " AND word IN (SELECT value FROM json_each(?))"
)


def turn_texts_of(table: str) -> str:
    """Texts of the listed rows of a full-text table that are turns."""
    return (
        f"SELECT text FROM {table} WHERE kind = 'episode'"
        " AND rowid IN (SELECT value FROM json_each(?))"
    )
