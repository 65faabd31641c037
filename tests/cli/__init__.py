"""The command line: its contract, help, streams, quiet and verbose output, add and list."""
