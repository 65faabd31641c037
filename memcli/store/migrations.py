"""Numbered, append-only schema migrations, run the same way for both backends.

Each backend declares its own chain (sqlite/migrations.py, pg/migrations.py): a list of
(name, step), each name starting with its number (`m004_...`), each step a function of the
backend's connection. Never edit a migration that has shipped: a schema change is the
next one. A backend says, in a `Ledger`, how a store counts the migrations it has had, how
a transaction is written there, and how processes take turns; the rest is here, once:

- a store a newer memcli migrated (more migrations than this one knows) is refused;
- each pending migration runs in its own write transaction, which first reads the count
  again (another process may have migrated the store meanwhile), and leaves a
  `migration.<name>` row in `meta` with the time it ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from memcli.errors import DatabaseError
from memcli.store.base import now_iso

Step = Callable[[Any], None]  # applied to a connection inside its transaction
Chain = list[tuple[str, Step]]


def append(chain: Chain, name: str, step: Step) -> None:
    """Add the next migration to a chain; its name must start with the next number."""
    if int(name[1:4]) != len(chain) + 1:
        raise RuntimeError(f"migration {name} is out of order")
    chain.append((name, step))


class Ledger:
    """How one backend's store keeps its migration count, for `migrate` to read and move.

    A backend subclasses it; `turn` (held across every pending migration) is needed only
    where a transaction that waited for another process would not see that process's
    tables."""

    version_name = "schema version"  # what the count is called in messages
    upgrade = "pip install -U memcli"  # how to get a memcli that knows a newer schema

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def version(self) -> int:
        """How many migrations the store has had."""
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[Any]:
        """A write transaction: one migration and its bookkeeping, all or nothing."""
        raise NotImplementedError

    def turn(self) -> AbstractContextManager[Any]:
        """Held while the pending migrations run, so that one process applies them."""
        return nullcontext()

    def set_version(self, number: int) -> None:
        """Record that the store has had `number` migrations (inside the transaction)."""
        raise NotImplementedError

    def set_meta(self, key: str, value: str) -> None:
        """Write a `meta` row (inside the transaction)."""
        raise NotImplementedError


def run_statements(conn: Any, statements: Sequence[str]) -> None:
    """Run DDL statements one by one inside the caller's transaction (`conn`: anything
    with `execute`, a connection or sqlite-utils' view of one)."""
    for statement in statements:
        conn.execute(statement)


def pending(version: int, chain: Sequence[tuple[str, Step]]) -> int:
    """How many of the chain's migrations a store at `version` has yet to have (0 for a
    newer store too)."""
    return max(0, len(chain) - version)


def migrate(ledger: Ledger, chain: Sequence[tuple[str, Step]]) -> int:
    """Apply every pending migration of the chain, each in its own transaction; the new
    version. DatabaseError for a store a newer memcli migrated."""
    version = ledger.version()
    if version > len(chain):
        raise DatabaseError(
            f"this database has {ledger.version_name} {version}, newer than this memcli "
            f"understands ({len(chain)})",
            fix=f"upgrade memcli ({ledger.upgrade})",
        )
    if version == len(chain):
        return version
    with ledger.turn():
        for number, (name, step) in enumerate(chain[version:], start=version + 1):
            with ledger.transaction():
                if ledger.version() >= number:  # another process got there first
                    continue
                step(ledger.conn)
                ledger.set_version(number)
                ledger.set_meta(f"migration.{name}", now_iso())
    return len(chain)
