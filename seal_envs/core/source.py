"""The two contracts a task source plugs into ``ToolUseEnv`` with: ``TaskSource`` and ``ToolBackend``.

They live in ``core`` so that every source (the native generated ``TaskSet``, BFCL's fixed
entries, a third party's) implements them without importing the env, and so that the env, the
trainer and the CLI call what the contract names instead of probing with ``hasattr``/``getattr``.
The protocols are structural (``typing.Protocol``): a source needs no base class, only these
members; ``tests/test_tasks.py`` and ``tests/bfcl/test_bfcl_env.py`` check the shipped sources.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol, runtime_checkable

from .calls import ParsedAction
from .types import CallEvent, Task, ToolCall, ToolSpec, Verdict
from .verifier import EpisodeRecord


@dataclass(frozen=True)
class Slot:
    """Where an index of a split sits: its domain, difficulty (1-4) and seed, known without
    building the task (sampling by domain or difficulty needs no skipped task generated)."""

    domain: str
    difficulty: int
    seed: int


@runtime_checkable
class ToolBackend(Protocol):
    """One episode's service: ``backend_cls(task.initial_state)`` makes a fresh one per reset."""

    POLICIES: Mapping[str, str]

    def tool_specs(self) -> dict[str, ToolSpec]:
        """Every tool of the episode (a native class shares them; BFCL's depend on the entry)."""

    def execute(self, call: ToolCall, available: Iterable[str] | None = None) -> CallEvent:
        """Validate and run one call; never raises for anything the agent sent."""

    def comparable_state(self) -> dict[str, Any]:
        """A copy of the state the verifier compares at the end of a user turn."""

    def parse_action(self, action: Any) -> ParsedAction:
        """The agent's action as calls and text (a backend may read more syntax than JSON)."""


@runtime_checkable
class TaskSource(Protocol):
    """The tasks of one split, with the backend and the verification that go with them.

    ``generated`` says whether tasks come from a seeded generator (so fresh tasks beyond every
    split exist, :func:`seal_envs.tasks.fresh_tasks`) or from a fixed list such as BFCL's."""

    split: str
    generated: bool

    @property
    def domains(self) -> tuple[str, ...]:
        """Every domain the split's tasks come from."""

    @property
    def held_out(self) -> tuple[str, ...]:
        """Domains that join only the ood split (none for a fixed list)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int) -> Task: ...

    def slot(self, index: int) -> Slot: ...

    def indices(self, domain: str | None = None, difficulty: int | None = None) -> list[int]: ...

    def backend_for(self, task: Task) -> Callable[[Mapping[str, Any]], ToolBackend]: ...

    def verify(self, task: Task, record: EpisodeRecord) -> Verdict: ...

    def task_from_id(self, task_id: str) -> Task: ...

    def with_split(self, split: str) -> "TaskSource": ...
