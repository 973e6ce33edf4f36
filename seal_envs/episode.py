"""One episode's state, made whole at ``reset`` and restored whole when a step fails.

Why one object: the env used to keep an episode in eighteen attributes set outside
``__init__`` and to snapshot them as a positional tuple; a field added to one and not the other
would leak between steps. Here every mutable part of an episode is a field, ``checkpoint``
copies exactly the fields, and a failed step puts the checkpoint back.

The messages are :class:`~seal_envs.core.frozen.FrozenDict` values appended once and never
changed, so the conversation is handed out as a tuple of the same objects: no copy per step.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from seal_envs.core.frozen import FrozenDict
from seal_envs.core.types import StepLabel, StepRecord, Task, Verdict
from seal_envs.core.verifier import EpisodeRecord

__all__ = ["Episode", "message"]


def message(role: str, content: str, **extra: Any) -> FrozenDict:
    """A transcript message, read-only from birth."""
    return FrozenDict(role=role, content=content, **extra)


@dataclass
class Episode:
    """Everything one episode may change. ``backend`` restores itself when a call fails."""

    task: Task
    backend: Any
    specs: Mapping[str, Any]
    parse: Callable[[Any], Any]
    available: set[str]
    user_turn: int = 0
    revealed: bool = False  # the current user turn's withheld value was asked for and given
    done: bool = False
    steps: list[StepRecord] = field(default_factory=list)
    immediate_labels: list[StepLabel] = field(default_factory=list)
    record: EpisodeRecord = field(default_factory=EpisodeRecord)
    turn_texts: list[str] = field(default_factory=list)  # the agent's text in the current user turn
    turn_results: list[Any] = field(default_factory=list)  # its call results in the current user turn
    messages: list[FrozenDict] = field(default_factory=list)
    observed: int = 0  # messages already shown in an observation
    reported: int = 0  # messages already handed out in an info's new_messages
    tools_reported: Any = None  # the tool list the last info carried
    surface_canonical: bool = True  # every observation so far came from the canonical surface
    verdict: Verdict | None = None
    labels: list[StepLabel] | None = None
    _messages_view: tuple | None = field(default=None, repr=False)

    def add(self, *new: FrozenDict) -> None:
        self.messages.extend(new)
        self._messages_view = None

    def conversation(self) -> tuple[FrozenDict, ...]:
        """The whole conversation so far, shared and read-only."""
        if self._messages_view is None or len(self._messages_view) != len(self.messages):
            self._messages_view = tuple(self.messages)
        return self._messages_view

    def checkpoint(self) -> "Episode":
        """A copy that a failed step can be rolled back to: containers copied, values shared
        (messages, records and labels are never changed once made)."""
        saved = copy.copy(self)
        saved.available, saved.steps, saved.messages = set(self.available), list(self.steps), list(self.messages)
        saved.immediate_labels, saved.turn_texts = list(self.immediate_labels), list(self.turn_texts)
        saved.turn_results = list(self.turn_results)
        r = self.record
        saved.record = EpisodeRecord(list(r.turn_states), list(r.turn_answers), list(r.turn_results),
                                     list(r.violations), set(r.guessed_withheld))
        return saved
