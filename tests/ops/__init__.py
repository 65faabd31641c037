"""The library API and its operations: answers, export and import, graph export, prune."""
