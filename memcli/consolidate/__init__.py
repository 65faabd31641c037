"""Consolidation: the stages that distil stored turns into the memory graph.

One module per stage (segment, summarize, link, gate, facts, concepts, entities,
supersede, reflect, words), each with a `run(stage)` function, declared in order in
`registry`. The frame around them: `runner` runs the registry's stages in order under the
store's lock; `options` holds what a run is asked to do and `reports` what it did; `job`
holds the run's state (`RunContext`, `Job`: settings, models, shared caches) and `stage`
a stage's model calls and counters (`Stage`). The stages' parts: `buffer` (episodic
buffers), `schemas` (the shapes of model replies), `lines` (turns and dates as prompts
show them), `fold` (merging a twin node into the one kept), `phrases`, `normalize` and
`concept_index` (key phrases and canonical concept labels), `names`, `entity_index`,
`entity_llm` and `entity_merge` (entities), `nearest` (the stored memories nearest a new
one), `quality` and `grounding` (checks on derived memories, names and triplets).
"""
