"""The whole tool: architecture, docs, README, packaging, CI, start-up cost, secrets in output."""
