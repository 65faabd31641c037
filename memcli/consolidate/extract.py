"""One prompt for what a few turns tell (prompts/extract.md): facts, entities and triplets.

The `facts` stage asks it about the turns of each segment the gate kept (in groups that fit
the window), and keeps the facts of the reply; the `entities` stage asks the very same
requests for the same turns and keeps the entities and triplets. A request's prompt and
schema depend only on its turns, so the second stage's replies come from the store's reply
cache: the instructions and the turns are sent to the model once, not once per stage. A
cache miss (a resumed run after new turns changed the gate's common words, say) only costs
the request again.

The reply's lists are capped to what its tokens carry and its texts bounded (`maxItems`,
`maxLength` in the schema, enforced by a server that constrains decoding to it), since a
reply cut at its limit is thrown away whole; the turn ids it may cite are those shown
(`enum`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memcli.consolidate.buffer import session_order, turn_tokens
from memcli.consolidate.lines import turn_line
from memcli.consolidate.schemas import ExtractReply, extract_reply
from memcli.consolidate.stage import Unfit
from memcli.models import Node
from memcli.prompting import data_block
from memcli.text import count_tokens

if TYPE_CHECKING:
    from memcli.consolidate.stage import Stage

#: Reply tokens one item takes, JSON included (SmolLM2's tokenizer, with the lengths the
#: schema allows: about 55 for a dated fact with its concepts, 45 for an entity, 40 for a
#: triplet), the share of the reply's tokens each list may take, and the reply's own
#: brackets and keys.
FACT_REPLY_TOKENS = 55
ENTITY_REPLY_TOKENS = 45
TRIPLET_REPLY_TOKENS = 40
SHARES = (0.5, 0.3, 0.2)
REPLY_OVERHEAD = 10
_NONE = data_block("(none)")


def chunks(
    episodes: Sequence[Node], budget: int, size: Callable[[Node], int] = turn_tokens
) -> list[list[Node]]:
    """Turns grouped per session, in conversation order, about `budget` tokens each (a
    turn's tokens by `size`)."""
    order = {s: i for i, s in enumerate(session_order(episodes))}
    ordered = sorted(episodes, key=lambda e: (order[e.session or ""], e.seq or 0, e.id))
    out: list[list[Node]] = []
    used = 0
    for ep in ordered:
        tokens = size(ep)
        if out and out[-1][-1].session == ep.session and used + tokens <= budget:
            out[-1].append(ep)
            used += tokens
        else:
            out.append([ep])
            used = tokens
    return out


def caps(stage: Stage, turns: Sequence[Node]) -> tuple[int, int, int]:
    """At most how many facts (never more than the turns), entities and triplets a
    request's reply is asked for: as many as the reply's tokens carry."""
    reply = stage.reply_room()
    if reply is None:
        return len(turns), len(turns), len(turns)
    room = max(0, reply - REPLY_OVERHEAD)
    sizes = (FACT_REPLY_TOKENS, ENTITY_REPLY_TOKENS, TRIPLET_REPLY_TOKENS)
    facts, entities, triplets = (
        max(1, int(room * share) // size) for share, size in zip(SHARES, sizes, strict=True)
    )
    return min(facts, len(turns)), entities, triplets


def request(stage: Stage, turns: Sequence[Node]) -> tuple[list[dict[str, str]], type[ExtractReply]]:
    """The messages and reply model of one request about `turns`."""
    facts, entities, triplets = caps(stage, turns)
    lines = "\n".join(turn_line(t, date_hints=True) for t in turns)
    messages = stage.prompt(
        "extract", turns=data_block(lines), max_facts=str(facts),
        max_entities=str(entities), max_triplets=str(triplets),
    )  # fmt: skip
    return messages, extract_reply(facts, entities, triplets, tuple(t.node_id for t in turns))


def ask(stage: Stage, turns: Sequence[Node]) -> ExtractReply | None:
    """The checked reply about `turns` (None: it stayed invalid, counted). Unfit when the
    prompt or its reply does not fit the model; remembered for the run, so the other
    stage splits the same turns at once rather than paying for the same cut reply (a cut
    reply is never cached)."""
    messages, model = request(stage, turns)
    prompt = messages[0]["content"]
    if prompt in stage.job.unfit_prompts:
        raise Unfit("did not fit the model earlier in this run")
    try:
        return stage.ask(messages, model)
    except Unfit:
        stage.job.unfit_prompts.add(prompt)
        raise


def line_tokens(turn: Node) -> int:
    """Estimated tokens of a turn as the prompt shows it."""
    return count_tokens(turn_line(turn, date_hints=True)) + 1


def groups(stage: Stage, turns: Sequence[Node]) -> list[list[Node]]:
    """One segment's turns in the groups asked about: within `chunk_tokens` and the room
    the window leaves for data."""
    cap = stage.job.cfg.chunk_tokens
    room = stage.data_room(
        "extract", turns=_NONE, max_facts="99", max_entities="99", max_triplets="99"
    )
    budget = cap if room is None else max(1, min(cap, room))
    return chunks(turns, budget, line_tokens)
