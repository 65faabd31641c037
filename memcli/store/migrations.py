"""Numbered, append-only schema migrations. Never edit one that has shipped: add the next."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from memcli.errors import DatabaseError

Migration = Callable[[Any], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    """Register `fn` as the next migration; its name must start with the next number."""
    number = int(fn.__name__[1:4])
    if number != len(MIGRATIONS) + 1:
        raise RuntimeError(f"migration {fn.__name__} is out of order")
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def run_script(conn: Any, script: str) -> None:
    """Run `;`-separated statements inside the caller's transaction.

    (`executescript` would commit the open transaction first.)
    """
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


@migration
def m001_initial(conn: Any) -> None:
    run_script(
        conn,
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE sources (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            space TEXT NOT NULL,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            format TEXT NOT NULL,
            episodes INTEGER NOT NULL DEFAULT 0,
            ingested_at TEXT NOT NULL,
            UNIQUE (space, sha256)
        );

        CREATE TABLE nodes (
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
        );
        CREATE UNIQUE INDEX nodes_key ON nodes (space, kind, key) WHERE key IS NOT NULL;
        CREATE INDEX nodes_space_kind ON nodes (space, kind);
        CREATE INDEX nodes_session ON nodes (space, session, seq);
        CREATE INDEX nodes_ref ON nodes (space, ref);

        CREATE TABLE node_sources (
            node INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            source INTEGER NOT NULL REFERENCES sources (id) ON DELETE CASCADE,
            PRIMARY KEY (node, source)
        ) WITHOUT ROWID;
        CREATE INDEX node_sources_source ON node_sources (source);

        CREATE TABLE edges (
            id INTEGER PRIMARY KEY,
            space TEXT NOT NULL,
            src INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            dst INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 1.0,
            props TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            UNIQUE (src, dst, type)
        );
        CREATE INDEX edges_dst ON edges (dst, type);
        CREATE INDEX edges_space_type ON edges (space, type);

        CREATE VIRTUAL TABLE nodes_fts USING fts5 (
            text, speaker, space UNINDEXED, kind UNINDEXED,
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        """,
    )


def current_version(conn: Any) -> int:
    """How many migrations this file has had applied."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: Any) -> int:
    """Apply every pending migration, each in its own transaction; return the new version."""
    from memcli.store.db import transaction

    version = current_version(conn)
    if version > len(MIGRATIONS):
        raise DatabaseError(
            f"this database has schema version {version}, newer than this memcli "
            f"understands ({len(MIGRATIONS)})",
            fix="upgrade memcli (pip install -U memcli)",
        )
    for number, (name, fn) in enumerate(MIGRATIONS[version:], start=version + 1):
        with transaction(conn):
            if current_version(conn) >= number:  # another process got there first
                continue
            fn(conn)
            conn.execute(f"PRAGMA user_version = {number}")
            stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                (f"migration.{name}", stamp),
            )
    return len(MIGRATIONS)


@migration
def m002_consolidation(conn: Any) -> None:
    run_script(
        conn,
        """
        CREATE TABLE llm_cache (
            key TEXT PRIMARY KEY,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            response TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        );

        CREATE TABLE runs (
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
        );
        CREATE INDEX runs_space_stage ON runs (space, stage, id);

        CREATE TABLE processed (
            space TEXT NOT NULL,
            stage TEXT NOT NULL,
            node INTEGER NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
            PRIMARY KEY (stage, node)
        ) WITHOUT ROWID;
        CREATE INDEX processed_node ON processed (node);

        CREATE TABLE locks (
            name TEXT PRIMARY KEY,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            acquired_at TEXT NOT NULL
        );
        """,
    )


@migration
def m003_fts_per_space(conn: Any) -> None:
    """One full-text table per space, so BM25 statistics never mix spaces."""
    conn.execute(
        "CREATE TABLE fts_spaces (id INTEGER PRIMARY KEY AUTOINCREMENT, space TEXT NOT NULL UNIQUE)"
    )
    spaces = [row[0] for row in conn.execute("SELECT DISTINCT space FROM nodes_fts")]
    for space in spaces:
        row = conn.execute("INSERT INTO fts_spaces (space) VALUES (?)", (space,))
        name = f"fts_{row.lastrowid}"
        conn.execute(
            f"CREATE VIRTUAL TABLE {name} USING fts5 ("
            " text, speaker, kind UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        conn.execute(
            f"INSERT INTO {name} (rowid, text, speaker, kind)"
            " SELECT rowid, text, speaker, kind FROM nodes_fts WHERE space = ?",
            (space,),
        )
    conn.execute("DROP TABLE nodes_fts")
