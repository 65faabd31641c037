"""`memcli mcp`: the Model Context Protocol server (server.py) and who may use it (access.py).

Imported only by that command: the `mcp` SDK costs a cold command tens of milliseconds.
"""
