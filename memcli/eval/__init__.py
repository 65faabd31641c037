"""Built-in benchmarks: loaders, runners and metrics."""
