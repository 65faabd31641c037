"""Model providers, structured output, context windows, the local embedder, a real model."""
