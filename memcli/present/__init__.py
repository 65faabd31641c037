"""How results look: text and tables for people, JSON Lines for programs.

`output.Output` is where a command writes (data on stdout, messages on stderr); one module
per kind of result renders it, the same way for every command that returns it: `answer`
(ask), `ingest` (ingest, add), `consolidate`, `inspect` (stats, a node, its provenance,
exported documents), `entity`, `listing` (list), `prune`, `transfer` (export, import),
`config`, `eval`; `common` holds what they share. The JSON of a result is its `to_dict()`:
the CLI's `--json`, the Python API and the MCP tools return the same.
"""
