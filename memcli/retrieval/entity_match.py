"""The question's entities: the starting vertices of the graph traversals (memcli.retrieval.kg).

The question is matched against the space's entities (named things, see
memcli.consolidate.entities) in the first pass every strategy shares (memcli.retrieval.
firstpass), by the plain similarity of memcli.retrieval.signals: a question that writes a
name matches that entity lexically; one that asks for a kind of thing ("which cities",
"what library") reaches the entities whose names or descriptions embed close to it. Each
matched entity is weighed by its specificity, the inverse document frequency of its
mentions (a name said in every other turn tells little). A space without entities has none.
"""

from __future__ import annotations

import math

from memcli.retrieval import SearchContext
from memcli.retrieval.firstpass import ranked
from memcli.retrieval.relevance import Relevance

ENTITY = ("entity",)


def entity_scores(
    ctx: SearchContext, found: Relevance, seeds: int, least: float
) -> dict[int, float]:
    """Matched entities -> plain similarity × specificity, the best `seeds` of them (an
    entity's similarity at least `least`)."""
    fp = found.fp
    entities = [i for i in fp.candidates if fp.kinds.get(i) == "entity"]
    similar = {i: s for i, s in found.relative(entities).items() if s >= least}
    if not similar:
        return {}
    turns = max(1, ctx.store.count_nodes(ctx.space).get("episode", 1))
    degree = ctx.store.degrees(list(similar))
    scored = {
        i: s * max(0.0, math.log((turns + 1) / (degree[i] + 1)) / math.log(turns + 1))
        for i, s in similar.items()
    }
    return {i: s for i, s in ranked(scored)[:seeds] if s > 0}
