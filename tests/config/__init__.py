"""Settings: precedence, validation, `memcli config`, the token file's permissions."""
