"""Standing rules: a user's instructions and preferences come with the answer.

In a conversation with an assistant, a user states rules ("always give the times in
24-hour format when I ask about meetings", "I prefer exact fractions") that every later
answer on that subject has to follow, while the later question never repeats them ("when
is the meeting?"). So besides the ranking, the user's rule statements (memcli.retrieval.
cues.states_rule) are ranked on their own by similarity to the question, and the best of
them join the results when they stand out from the other rules: at least `RULE_Z` standard
deviations above the rules' mean similarity, at most `RULES` of them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from memcli.retrieval import SearchContext
from memcli.retrieval.cues import states_rule, user_roles
from memcli.retrieval.firstpass import similarities

RULES = 2
RULE_Z = 2.0
# Words that open most rule statements: the full-text search that finds candidates.
_MARKERS = "always never prefer preference rather remember sure"
_CANDIDATES = 400
_NEIGHBOURS_OF = 10  # best matches whose neighbours show who is in the conversation


def standing_rules(
    ctx: SearchContext, question: str, near: Sequence[int] = ()
) -> list[tuple[int, float]]:
    """The user's rule statements that the question falls under, best first, with their
    cosine to the question (none without vectors, or when the turns `near` the question's
    best matches show no assistant)."""
    vector = ctx.query_vector(question)
    users = _users(ctx, near) if vector is not None else frozenset()
    if not users:
        return []
    found = [i for i, _ in ctx.store.text_search(ctx.space, _MARKERS, _CANDIDATES, ["episode"])]
    nodes = ctx.store.nodes_by_ids(found)
    rules = [i for i in found if states_rule(nodes[i], users)]
    if len(rules) < 3:  # too few to tell which stands out
        return []
    cosines = similarities(ctx, vector, rules)
    values = list(cosines.values())
    mean, spread = statistics.fmean(values), statistics.pstdev(values)
    if spread <= 0:
        return []
    chosen = sorted(cosines.items(), key=lambda item: -item[1])[:RULES]
    return [(i, c) for i, c in chosen if (c - mean) / spread >= RULE_Z]


def _users(ctx: SearchContext, turns: Sequence[int]) -> frozenset[str]:
    """The user's speaker names, if the first few of these turns and the turns next to
    them show a conversation with an assistant (else none)."""
    first = list(turns)[:_NEIGHBOURS_OF]
    near = {n for e in ctx.store.edge_rows(first, ["NEXT"]) for n in e[:2]} | set(first)
    return frozenset(
        user_roles(n.speaker for n in ctx.store.nodes_by_ids(near).values() if n.speaker)
    )


def with_rules(
    ctx: SearchContext, question: str, order: Sequence[tuple[int, float]]
) -> list[tuple[int, float]]:
    """The ranking with the standing rules the question falls under moved to its top."""
    rules = standing_rules(ctx, question, [i for i, _ in order])
    if not rules:
        return list(order)
    top = order[0][1] if order else 1.0
    ids = {i for i, _ in rules}
    return [(i, top) for i, _ in rules] + [(i, s) for i, s in order if i not in ids]
