"""The consolidation stages, declared once, in the order they run.

Each entry names a stage (also the name of its `runs` rows and `processed` marks), the
function that runs it, whether it needs a chat model, and which node kind its pending work
is counted in. The runner runs the stages from here, `--stage` is checked against them, and
a dry run and `inspect` count their pending work from here. A new stage is a module with a
`run(stage)` function, its runner below, and one entry in PIPELINE.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcli.consolidate.stage import Stage
    from memcli.store import Store


@dataclass(frozen=True)
class StageSpec:
    """One stage of the pipeline: its name, its runner, and what it needs and consumes."""

    name: str
    run: Callable[[Stage], None]
    needs_llm: bool = False  # cannot run at all without a chat model
    #: The node kind whose `processed` marks record the stage's work; None for `words`,
    #: whose work left is the turns' words without a vector.
    consumes: str | None = None

    def pending(self, store: Store, space: str) -> int:
        """Units of work left for a later run in a space."""
        if self.consumes is None:
            return store.count_unembedded_words(space)
        return len(store.unprocessed(space, self.name, kind=self.consumes))


# Each stage's module is imported when the stage runs, not with this list: reading the list
# (`inspect`, the `--stage` check) stays light, while the reply schemas of the LLM stages
# take a third of a second to import.


def _segment(stage: Stage) -> None:
    from memcli.consolidate import segment

    segment.run(stage)


def _summarize(stage: Stage) -> None:
    from memcli.consolidate import summarize

    summarize.run(stage)


def _link(stage: Stage) -> None:
    from memcli.consolidate import link

    link.run(stage)


def _gate(stage: Stage) -> None:
    from memcli.consolidate import gate

    gate.run(stage)


def _facts(stage: Stage) -> None:
    from memcli.consolidate import facts

    facts.run(stage)


def _concepts(stage: Stage) -> None:
    from memcli.consolidate import concepts

    concepts.run(stage)


def _entities(stage: Stage) -> None:
    from memcli.consolidate import entities

    entities.run(stage)


def _supersede(stage: Stage) -> None:
    from memcli.consolidate import supersede

    supersede.run(stage)


def _reflect(stage: Stage) -> None:
    from memcli.consolidate import reflect

    reflect.run(stage)


def _words(stage: Stage) -> None:
    from memcli.consolidate import words

    words.run(stage)


PIPELINE: tuple[StageSpec, ...] = (
    StageSpec("segment", _segment, consumes="episode"),
    StageSpec("summarize", _summarize, consumes="segment"),
    StageSpec("link", _link, needs_llm=True, consumes="segment"),
    StageSpec("gate", _gate, needs_llm=True, consumes="segment"),
    StageSpec("facts", _facts, needs_llm=True, consumes="episode"),
    StageSpec("concepts", _concepts, consumes="segment"),
    StageSpec("entities", _entities, consumes="segment"),
    StageSpec("supersede", _supersede, needs_llm=True, consumes="fact"),
    StageSpec("reflect", _reflect, needs_llm=True, consumes="fact"),
    StageSpec("words", _words),
)
#: Stage names in the order they run.
STAGES: tuple[str, ...] = tuple(spec.name for spec in PIPELINE)
#: Stages that cannot run at all without a chat model.
LLM_ONLY: frozenset[str] = frozenset(spec.name for spec in PIPELINE if spec.needs_llm)
