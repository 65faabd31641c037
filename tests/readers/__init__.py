"""Input: the readers of each format and `memcli ingest` with bad, large or secret-bearing input."""
