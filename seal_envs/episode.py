"""One episode's state, made whole at ``reset`` and restored whole when a step fails.

Why one object: the env used to keep an episode in eighteen attributes set outside
``__init__`` and to snapshot them as a positional tuple; a field added to one and not the other
would leak between steps. Here every mutable part of an episode is a field, ``checkpoint``
records exactly the fields, and a failed step puts the checkpoint back.

The messages are :class:`~seal_envs.core.frozen.FrozenDict` values appended once and never
changed, so the conversation is handed out as a tuple of the same objects: no copy per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any, Callable, Mapping, Sequence

from seal_envs.core.frozen import FrozenDict
from seal_envs.core.types import StepLabel, StepRecord, Task, Verdict
from seal_envs.core.verifier import EpisodeRecord

__all__ = ["Checkpoint", "Episode", "message", "plain_messages"]


def message(role: str, content: str, *, tool_calls: tuple[FrozenDict, ...] | None = None, **extra: str) -> FrozenDict:
    """A transcript message, read-only from birth. Every value is a string except
    ``tool_calls``, OpenAI's entries ``{"id", "type", "function": {"name", "arguments"}}``:
    the shape :func:`plain_messages` copies."""
    if tool_calls is not None:
        extra["tool_calls"] = tool_calls
    return FrozenDict(role=role, content=content, **extra)


def plain_messages(messages: Sequence[FrozenDict]) -> list[dict]:
    """Plain, mutable copies of messages made by :func:`message`: what ``thaw`` gives, with the
    flat dicts copied in C (``thaw`` walks every value in Python: a sixteenth of a step)."""
    out = []
    for m in messages:
        plain = dict(m)
        calls = plain.get("tool_calls")
        if calls is not None:
            plain["tool_calls"] = [{**entry, "function": dict(entry["function"])} for entry in calls]
        out.append(plain)
    return out


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

    def checkpoint(self) -> "Checkpoint":
        """What a failed step is rolled back to. Within a step the episode's lists only grow
        (or are replaced by fresh ones) and its sets are small, so the checkpoint keeps the
        fields as they are, the lists' lengths and copies of the sets: no list is copied (a
        copy of every list was a tenth of a step)."""
        return Checkpoint(self)


#: The Episode lists a step may append to, and the record's.
_LISTS = ("steps", "immediate_labels", "messages", "turn_texts", "turn_results")
_RECORD_LISTS = ("turn_states", "turn_answers", "turn_results", "violations")


#: Every Episode field, read in one C call. Reading ``__dict__`` instead would turn the
#: episode's inline attribute values into a real dict, and every later attribute access of the
#: episode would take the slow path: that was a fifteenth of a step.
_FIELDS = tuple(f.name for f in fields(Episode))
_read_fields = attrgetter(*_FIELDS)


class Checkpoint:
    """An :class:`Episode` as it was before a step; :meth:`restore` gives it back whole."""

    __slots__ = ("_fields", "_lengths", "_record_lengths", "_available", "_guessed")

    def __init__(self, e: Episode):
        self._fields = _read_fields(e)  # every field: scalars, and the containers by reference
        # spelt out rather than looped over _LISTS: this runs before every step
        self._lengths = (len(e.steps), len(e.immediate_labels), len(e.messages), len(e.turn_texts),
                         len(e.turn_results))
        r = e.record
        self._record_lengths = (len(r.turn_states), len(r.turn_answers), len(r.turn_results), len(r.violations))
        self._available, self._guessed = set(e.available), set(r.guessed_withheld)

    def restore(self) -> Episode:
        episode = Episode.__new__(Episode)
        for name, value in zip(_FIELDS, self._fields):
            setattr(episode, name, value)
        for name, n in zip(_LISTS, self._lengths):
            del getattr(episode, name)[n:]
        record = episode.record
        for name, n in zip(_RECORD_LISTS, self._record_lengths):
            del getattr(record, name)[n:]
        episode.available, record.guessed_withheld = set(self._available), set(self._guessed)
        return episode
