"""One pydantic model per prompt: the shape each model reply must fit.

Node ids are plain strings here ("ep12"); the stages check them against the ids the
prompt showed and drop the rest, so a reply can never point at a node it invented.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, create_model


def _clamped(value: Any) -> Any:
    """A number out of [0, 1] brought to its nearest end: a small model writes a belief of
    2 or a confidence of 90 where the schema's bounds are not enforced while it decodes;
    refusing the whole reply for it cost more than it saved. Anything else is left for
    validation to judge."""
    if isinstance(value, bool):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return value
    return min(1.0, max(0.0, number)) if number == number else value


#: A share from 0 to 1 (a belief, a confidence); a number outside is clamped, not refused.
Share = Annotated[float, Field(ge=0.0, le=1.0), BeforeValidator(_clamped)]


class Boundaries(BaseModel):
    """prompts/boundaries.md: where new topics start in a numbered run of turns."""

    boundaries: list[int] = Field(
        description="numbers of the turns that start a new topic (never 1)"
    )


class SegmentSummary(BaseModel):
    """prompts/summarize.md: a segment's summary and keywords."""

    summary: str = Field(min_length=1, description="what the turns say, in a few sentences")
    keywords: list[str] = Field(description="up to 5 specific topic keywords")


class TopicLink(BaseModel):
    """One judged pair in prompts/relate.md."""

    id: str = Field(description="the candidate segment id, e.g. sg4")
    label: Literal["support", "contradict", "coreference", "causal", "semantic", "unrelated"]
    confidence: Share


class TopicLinks(BaseModel):
    """prompts/relate.md: how the new segment relates to each candidate."""

    links: list[TopicLink]


@lru_cache(maxsize=256)
def topic_links(ids: tuple[str, ...]) -> type[TopicLinks]:
    """TopicLinks whose ids the schema sent restricts to the candidates shown (`enum`, which
    a grammar-constrained server enforces while it decodes: a small model otherwise invents
    ids); validation still takes any id, and the stage drops those not shown."""
    extra: dict[str, Any] = {"enum": list(ids)}
    link = create_model("TopicLink", __base__=TopicLink, id=(str, Field(json_schema_extra=extra)))
    return create_model("TopicLinks", __base__=TopicLinks, links=(list[link], ...))  # type: ignore[valid-type]


def _sent(**bounds: Any) -> dict[str, Any]:
    """Bounds for the schema sent only (`maxLength`, `maxItems`): a server that constrains
    decoding holds a reply to them, so it cannot outgrow its tokens; a reply past them from
    one that does not is not refused for it."""
    return bounds


class ExtractedFact(BaseModel):
    """One fact in prompts/extract.md."""

    text: str = Field(
        min_length=1,
        description="a standalone atomic claim",
        json_schema_extra=_sent(maxLength=160),
    )
    belief: Share = Field(description="1.0 stated outright, lower when inferred")
    sources: list[str] = Field(
        min_length=1,
        description="ids of the turns that support it",
        json_schema_extra=_sent(maxItems=2),
    )
    concepts: list[str] = Field(
        default_factory=list,
        description="snake_case topic labels",
        json_schema_extra=_sent(maxItems=2),
    )
    date: str | None = Field(
        default=None, description="YYYY-MM-DD, YYYY-MM or YYYY the claim refers to, or null"
    )


class Reflection(BaseModel):
    """One reflection in prompts/reflect.md."""

    text: str = Field(min_length=1)
    belief: Share
    facts: list[str] = Field(min_length=1, description="ids of the facts it rests on")


class ReflectionsReply(BaseModel):
    """prompts/reflect.md: new higher-level observations."""

    reflections: list[Reflection]


class EntityNote(BaseModel):
    """One entity in prompts/extract.md."""

    name: str = Field(
        min_length=1, max_length=200, description="the name as written most fully",
        json_schema_extra=_sent(maxLength=60),
    )  # fmt: skip
    type: str = Field(
        default="other", max_length=40, description="person, place, product ...",
        json_schema_extra=_sent(maxLength=20),
    )  # fmt: skip
    description: str = Field(
        default="", max_length=1000, description="one sentence",
        json_schema_extra=_sent(maxLength=160),
    )  # fmt: skip
    turns: list[str] = Field(
        min_length=1,
        description="ids of the turns it rests on",
        json_schema_extra=_sent(maxItems=2),
    )


class Triplet(BaseModel):
    """One (subject, predicate, object) statement in prompts/extract.md."""

    subject: str = Field(min_length=1, max_length=200, json_schema_extra=_sent(maxLength=60))
    predicate: str = Field(min_length=1, max_length=120, json_schema_extra=_sent(maxLength=40))
    object: str = Field(min_length=1, max_length=200, json_schema_extra=_sent(maxLength=60))
    turns: list[str] = Field(
        min_length=1,
        description="ids of the turns that state it",
        json_schema_extra=_sent(maxItems=2),
    )
    date: str | None = Field(default=None, description="YYYY-MM-DD, YYYY-MM or YYYY, or null")


class ExtractReply(BaseModel):
    """prompts/extract.md: the facts, entities and triplets of a few turns, in one reply.
    The schema sent requires all three lists (a grammar then makes the model write each);
    a reply without entities or triplets is still taken, one without facts is not."""

    model_config = ConfigDict(json_schema_extra={"required": ["facts", "entities", "triplets"]})

    facts: list[ExtractedFact]
    entities: list[EntityNote] = Field(default_factory=list)
    triplets: list[Triplet] = Field(default_factory=list)


def _first(count: int) -> BeforeValidator:
    """Keep a list's first `count` items (a server that does not hold a reply to the
    schema's `maxItems` may give more; the first are the most important)."""
    return BeforeValidator(lambda value: value[:count] if isinstance(value, list) else value)


@lru_cache(maxsize=256)
def extract_reply(
    facts: int, entities: int, triplets: int, ids: tuple[str, ...]
) -> type[ExtractReply]:
    """ExtractReply whose lists are capped (`maxItems`) and whose turn ids are held to the
    `ids` shown (`enum`) in the schema sent, which a grammar-constrained server enforces
    while it decodes: a reply cannot outgrow its tokens, and a small model cannot cite a
    turn it invented (validation still takes any id; the stages drop those not shown)."""

    def cited(name: str, base: type[BaseModel]) -> type[BaseModel]:
        extra = _sent(maxItems=2, items={"type": "string", "enum": list(ids)})
        field = (list[str], Field(min_length=1, json_schema_extra=extra))
        return create_model(base.__name__, __base__=base, **{name: field})  # type: ignore[call-overload]

    def capped(item: type[BaseModel], count: int, required: bool = False) -> Any:
        extra = _sent(maxItems=count)
        bound = (
            Field(json_schema_extra=extra)
            if required
            else Field(default_factory=list, json_schema_extra=extra)
        )
        return (Annotated[list[item], _first(count)], bound)  # type: ignore[valid-type]

    fields = {
        "facts": capped(cited("sources", ExtractedFact), facts, required=True),
        "entities": capped(cited("turns", EntityNote), entities),
        "triplets": capped(cited("turns", Triplet), triplets),
    }
    return create_model("ExtractReply", __base__=ExtractReply, **fields)


class Judgement(BaseModel):
    """One judged pair in prompts/supersede.md."""

    new: str = Field(description="the id of the new fact, e.g. fa12")
    old: str = Field(description="the id of the earlier fact shown under it")
    relation: Literal["updates", "contradicts", "unrelated"]


class SupersedeReply(BaseModel):
    """prompts/supersede.md: which earlier facts each new fact updates or contradicts."""

    judgements: list[Judgement]
