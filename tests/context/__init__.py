"""The packed context: passages, derived memories, subject groups, time expressions."""
