"""`memcli ui`: the pages, access rules, the server process, a real browser."""
