"""Consolidation: the stages that distil stored turns into the memory graph.

One module per stage (segment, summarize, link, gate, facts, concepts, entities,
supersede, reflect, words), each with a `run(stage)` function. `runner` runs them in order
under the store's lock; `options` holds what a run is asked to do and `reports` what it
did; `common` holds the run (`Job`), a stage's model calls and counters (`Stage`) and the
helpers several stages use. The stages' parts: `buffer` (episodic buffers), `schemas` (the
shapes of model replies), `phrases`, `normalize` and `concept_index` (key phrases and
canonical concept labels), `names`, `entity_index`, `entity_llm` and `entity_merge`
(entities), `nearest` (the stored memories nearest a new one).
"""
