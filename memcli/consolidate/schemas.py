"""One pydantic model per prompt: the shape each model reply must fit.

Node ids are plain strings here ("ep12"); the stages check them against the ids the
prompt showed and drop the rest, so a reply can never point at a node it invented.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field


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


class ExtractedFact(BaseModel):
    """One fact in prompts/facts.md."""

    text: str = Field(min_length=1, description="a standalone atomic claim")
    belief: Share = Field(description="1.0 stated outright, lower when inferred")
    sources: list[str] = Field(min_length=1, description="ids of the turns that support it")
    concepts: list[str] = Field(default_factory=list, description="snake_case topic labels")
    date: str | None = Field(
        default=None, description="YYYY-MM-DD, YYYY-MM or YYYY the claim refers to, or null"
    )


class ExtractedConcept(BaseModel):
    """One concept in prompts/facts.md."""

    label: str = Field(min_length=1, description="snake_case topic label, 1-4 words")
    episodes: list[str] = Field(description="ids of the new turns about it")


class FactsReply(BaseModel):
    """prompts/facts.md: new facts and concepts of a chunk of turns."""

    facts: list[ExtractedFact]
    concepts: list[ExtractedConcept] = Field(default_factory=list)


class Reflection(BaseModel):
    """One reflection in prompts/reflect.md."""

    text: str = Field(min_length=1)
    belief: Share
    facts: list[str] = Field(min_length=1, description="ids of the facts it rests on")


class ReflectionsReply(BaseModel):
    """prompts/reflect.md: new higher-level observations."""

    reflections: list[Reflection]


class EntityNote(BaseModel):
    """One entity in prompts/entities.md."""

    name: str = Field(min_length=1, max_length=200, description="the name as written most fully")
    type: str = Field(default="other", max_length=40, description="person, place, product ...")
    description: str = Field(default="", max_length=1000, description="one or two sentences")
    turns: list[str] = Field(min_length=1, description="ids of the turns it rests on")


class Triplet(BaseModel):
    """One (subject, predicate, object) statement in prompts/entities.md."""

    subject: str = Field(min_length=1, max_length=200)
    predicate: str = Field(min_length=1, max_length=120)
    object: str = Field(min_length=1, max_length=200)
    turns: list[str] = Field(min_length=1, description="ids of the turns that state it")
    date: str | None = Field(default=None, description="YYYY-MM-DD, YYYY-MM or YYYY, or null")


class EntitiesReply(BaseModel):
    """prompts/entities.md: the entities of a segment with descriptions, and its triplets."""

    entities: list[EntityNote]
    triplets: list[Triplet] = Field(default_factory=list)


class Judgement(BaseModel):
    """One judged pair in prompts/supersede.md."""

    new: str = Field(description="the id of the new fact, e.g. fa12")
    old: str = Field(description="the id of the earlier fact shown under it")
    relation: Literal["updates", "contradicts", "unrelated"]


class SupersedeReply(BaseModel):
    """prompts/supersede.md: which earlier facts each new fact updates or contradicts."""

    judgements: list[Judgement]
