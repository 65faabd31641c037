"""Consolidation: the stages, their rules and floors, model faults, the CLI."""
