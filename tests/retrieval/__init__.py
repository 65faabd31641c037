"""Retrieval: the strategies, the graph, explanations, turn context and turn embeddings."""
