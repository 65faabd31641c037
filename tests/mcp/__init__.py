"""`memcli mcp`: the server over stdio and HTTP, its access rules, hostile clients."""
