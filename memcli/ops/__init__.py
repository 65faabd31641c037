"""The operations behind the library API (memcli.memory.Memory), one module each: add,
ingest, ask, consolidate, prune, inspect, entity, graph_export, listing, transfer (with
dump and import_plan), reindex. Each takes a `base.MemoryBase` (the store, the space, the
settings and the models) and returns a typed result; none prints or exits.
"""
