"""Consolidation: the stages that distil stored turns into the memory graph.

One module per stage (segment, summarize, link, gate, facts, concepts, entities,
supersede, reflect, words), each with a `run(stage)` function; `runner` runs them in order under
the store's lock, `common` holds what they share, `text`/`normalize`/`dates` are the
rule-based helpers of the no-LLM path.
"""
