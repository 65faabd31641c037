"""`memcli ui`: a local web page to browse, search and explain what the memory holds.

A thin layer over the library (memcli.memory.Memory, memcli.ops): the same search,
timeline, node, entity and prune-preview code the CLI and MCP use, written out as HTML.
The store is opened read-only; the page answers only on 127.0.0.1, to requests carrying
the token printed at start (memcli.ui.guard). starlette and uvicorn are imported only here.
"""
