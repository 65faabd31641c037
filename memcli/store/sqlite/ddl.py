"""The DDL of the SQLite store's shipped migrations, verbatim, one statement per string.

Hand-written because sqlite-utils has no words for AUTOINCREMENT, WITHOUT ROWID or partial
indexes, and frozen because an applied migration's effect must never change: a new schema
change is a new migration (sqlite/migrations.py), never an edit here.
"""

from __future__ import annotations

M001_INITIAL = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE sources (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            space TEXT NOT NULL,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            format TEXT NOT NULL,
            episodes INTEGER NOT NULL DEFAULT 0,
            ingested_at TEXT NOT NULL,
            UNIQUE (space, sha256)
        )""",
    """CREATE TABLE nodes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            space TEXT NOT NULL,
            kind TEXT NOT NULL,
            text TEXT NOT NULL,
            speaker TEXT,
            session TEXT,
            seq INTEGER,
            timestamp TEXT,
            ref TEXT,
            belief REAL,
            status TEXT,
            key TEXT,
            props TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        )""",
    "CREATE UNIQUE INDEX nodes_key ON nodes (space, kind, key) WHERE key IS NOT NULL",
    "CREATE INDEX nodes_space_kind ON nodes (space, kind)",
    "CREATE INDEX nodes_session ON nodes (space, session, seq)",
    "CREATE INDEX nodes_ref ON nodes (space, ref)",
    """CREATE TABLE node_sources (
            node INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            source INTEGER NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
            PRIMARY KEY (node, source)
        ) WITHOUT ROWID""",
    "CREATE INDEX node_sources_source ON node_sources (source)",
    """CREATE TABLE edges (
            id INTEGER PRIMARY KEY,
            space TEXT NOT NULL,
            src INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            dst INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 1.0,
            props TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            UNIQUE (src, dst, type)
        )""",
    "CREATE INDEX edges_dst ON edges (dst, type)",
    "CREATE INDEX edges_space_type ON edges (space, type)",
    """CREATE VIRTUAL TABLE nodes_fts USING fts5 (
            text, speaker, space UNINDEXED, kind UNINDEXED,
            tokenize = 'porter unicode61 remove_diacritics 2'
        )""",
)

M002_CONSOLIDATION = (
    """CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            response TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        )""",
    """CREATE TABLE runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            space TEXT NOT NULL,
            stage TEXT NOT NULL,
            status TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            items INTEGER NOT NULL DEFAULT 0,
            nodes INTEGER NOT NULL DEFAULT 0,
            edges INTEGER NOT NULL DEFAULT 0,
            llm_calls INTEGER NOT NULL DEFAULT 0,
            cache_hits INTEGER NOT NULL DEFAULT 0,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            failures INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        )""",
    "CREATE INDEX runs_space_stage ON runs (space, stage, id)",
    """CREATE TABLE processed (
            space TEXT NOT NULL,
            stage TEXT NOT NULL,
            node INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            PRIMARY KEY (stage, node)
        ) WITHOUT ROWID""",
    "CREATE INDEX processed_node ON processed (node)",
    """CREATE TABLE locks (
            name TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            acquired_at TEXT NOT NULL
        )""",
)

M003_FTS_SPACES = (
    "CREATE TABLE fts_spaces (id INTEGER PRIMARY KEY AUTOINCREMENT, space TEXT NOT NULL UNIQUE)"
)
M003_OLD_SPACES = "SELECT DISTINCT space FROM nodes_fts"


def m003_text_table(name: str) -> str:
    """A space's full-text table as m003 made it."""
    return (
        f"CREATE VIRTUAL TABLE {name} USING fts5 ("
        " text, speaker, kind UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')"
    )


def m003_copy_space(table: str) -> str:
    """Copy one space's rows of the shared full-text table into its own table."""
    return (
        f"INSERT INTO {table} (rowid, text, speaker, kind)"
        " SELECT rowid, text, speaker, kind FROM nodes_fts WHERE space = ?"
    )


def m005_text_table(name: str) -> str:
    """A space's full-text table with the `context` column of its turns."""
    return (
        f"CREATE VIRTUAL TABLE {name} USING fts5 ("
        " text, speaker, kind UNINDEXED, context,"
        " tokenize = 'porter unicode61 remove_diacritics 2')"
    )


def m005_old_rows(table: str) -> str:
    return f"SELECT rowid, text, speaker, kind FROM {table}"


def m005_put_rows(table: str) -> str:
    return f"INSERT INTO {table} (rowid, text, speaker, kind, context) VALUES (?, ?, ?, ?, '')"


M005_TURNS = "SELECT id FROM nodes WHERE space = ? AND kind = 'episode' ORDER BY id"


M006_WORDS = """CREATE TABLE words (
            space TEXT NOT NULL,
            word TEXT NOT NULL,
            turns INTEGER NOT NULL,
            vector BLOB,
            PRIMARY KEY (space, word)
        ) WITHOUT ROWID"""


def m006_turn_texts(table: str) -> str:
    return f"SELECT text FROM {table} WHERE kind = 'episode'"


M008_UNIT_FAILURES = (
    """CREATE TABLE unit_failures (
            space TEXT NOT NULL,
            stage TEXT NOT NULL,
            node INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            runs INTEGER NOT NULL,
            PRIMARY KEY (stage, node)
        ) WITHOUT ROWID""",
    "CREATE INDEX unit_failures_node ON unit_failures (node)",
)


# m009: a space's organisers (segments, concepts, entities) get a full-text table of their own,
# with the same layout as m005's, and their rows move there from the memories' table.
M009_ORGANISER_KINDS = ("segment", "concept", "entity")


def m009_move_rows(table: str, organisers: str) -> tuple[str, str]:
    """Copy the organisers' rows of a space's full-text table into their own, then delete them."""
    kinds = ", ".join(f"'{k}'" for k in M009_ORGANISER_KINDS)
    return (
        f"INSERT INTO {organisers} (rowid, text, speaker, kind, context)"
        f" SELECT rowid, text, speaker, kind, context FROM {table} WHERE kind IN ({kinds})",
        f"DELETE FROM {table} WHERE kind IN ({kinds})",
    )


# m010: the nodes of a space whose text is not all ASCII (more bytes than characters).
M010_NOT_ASCII = (
    "SELECT id, kind, text, speaker FROM nodes"
    " WHERE space = ? AND length(CAST(text AS BLOB)) <> length(text) ORDER BY id"
)
