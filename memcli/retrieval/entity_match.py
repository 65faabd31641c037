"""The question's entities: the starting vertices of the graph traversals (memcli.retrieval.kg).

The question is matched against the space's entities (named things, see
memcli.consolidate.entities) by the same fused full-text and vector similarity as memories:
a question that writes a name matches that entity lexically; one that asks for a kind of
thing ("which cities", "what library") reaches the entities whose names or descriptions
embed close to it. Each matched entity is weighed by its specificity, the inverse document
frequency of its mentions (a name said in every other turn tells little). A space
without entities has none.
"""

from __future__ import annotations

import math

from memcli.retrieval import SearchContext
from memcli.retrieval.fusion import fused_groups, top

ENTITY = ("entity",)


def entity_scores(ctx: SearchContext, query: str) -> dict[int, float]:
    """Matched entities -> similarity × specificity, the best `entity_seeds` of them."""
    cfg = ctx.cfg
    if not ctx.store.kinds_present(ctx.space, ENTITY):
        return {}
    sim = fused_groups(ctx, query, [(ENTITY, cfg.entity_seeds * 4)])
    found = {i: s for i, s in sim.scores.items() if s >= cfg.entity_min_similarity}
    if not found:
        return {}
    turns = max(1, ctx.store.count_nodes(ctx.space).get("episode", 1))
    degree = ctx.store.degrees(list(found))
    scored = {
        i: s * max(0.0, math.log((turns + 1) / (degree[i] + 1)) / math.log(turns + 1))
        for i, s in found.items()
    }
    return dict(top(scored, cfg.entity_seeds))
