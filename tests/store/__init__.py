"""The store: schema, migrations, writes, locks, damage, read-only files, search indexes."""
