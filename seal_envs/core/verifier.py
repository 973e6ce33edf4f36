"""Executable verification, per user turn, in the manner of BFCL's multi-turn checker.

The reference plan is replayed on a fresh copy of the initial state (once per task object: the
canonical JSON of each turn's reference state is cached, see :func:`_reference`); after each user turn the
agent's state must equal the reference state (state check), the agent's words to the user must
contain what the user asked for (response check), no policy may have been violated, and a value
the user withheld must have been asked for rather than guessed. Progress is the fraction of user
turns whose checks all passed.
"""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass, field
from typing import Any

from .backend import Backend
from .official import CHECK_ERROR, CHECK_FAIL, CHECK_PASS, CheckOutcome, TurnFacts, guarded
from .types import Check, Task, Verdict, canonical_json

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def _as_number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def answer_contains(answer: str, required: str) -> bool:
    """Numbers match by value (``1,250.0`` answers ``1250``); other text case-insensitively."""
    target = _as_number(required)
    if target is not None:
        return any(_as_number(m) == target for m in _NUMBER.findall(answer))
    return required.lower() in answer.lower()


def reference_states(task: Task, backend_cls: type[Backend]) -> list[dict[str, Any]]:
    """The comparable state after each user turn when the reference plan is followed."""
    sim = backend_cls(task.initial_state)
    states = []
    for turn in task.turns:
        for call in turn.plan:
            sim.execute(call)
        states.append(sim.comparable_state())
    return states


def _first_difference(expected: Any, actual: Any, path: str = "") -> str:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            if key not in actual:
                return f"{path}/{key} missing"
            if key not in expected:
                return f"{path}/{key} unexpected"
            if canonical_json(expected[key]) != canonical_json(actual[key]):
                return _first_difference(expected[key], actual[key], f"{path}/{key}")
    return f"{path or '/'}: expected {canonical_json(expected)[:80]}, got {canonical_json(actual)[:80]}"


@dataclass
class EpisodeRecord:
    """What the env observed during an episode that verification needs."""

    turn_states: list[dict[str, Any] | None] = field(default_factory=list)
    turn_answers: list[str] = field(default_factory=list)
    turn_results: list[list[Any]] = field(default_factory=list)  # results of successful calls (None for failed)
    violations: list[tuple[int, str]] = field(default_factory=list)  # (turn, rule)
    guessed_withheld: set[int] = field(default_factory=set)

    def copy(self) -> "EpisodeRecord":
        """A copy whose containers are its own (their items shared): what a verifier is handed,
        so that one that changes it and then raises cannot change the episode."""
        return EpisodeRecord(list(self.turn_states), list(self.turn_answers), list(self.turn_results),
                             list(self.violations), set(self.guessed_withheld))


def _reference_replay(task: Task, backend_cls: type[Backend]) -> tuple[list[dict[str, Any]], list[str]]:
    """The reference state after each user turn, and per turn why its replay raised ("" when it
    did not): the official ``gt_error``, which fails that turn instead of the whole verification."""
    sim = backend_cls(task.initial_state)
    states, errors = [], []
    for turn in task.turns:
        _, error = guarded(lambda plan=turn.plan: [sim.execute(call) for call in plan])
        states.append(sim.comparable_state())
        errors.append(error)
    return states, errors


@dataclass(frozen=True)
class _Reference:
    """A task's reference, as verification reads it: per user turn the canonical JSON of the
    reference state and why the replay raised ("" when it did not). Strings only: immutable,
    so every episode of the task shares it, and a fraction of the states' memory."""

    spelled: tuple[str, ...]
    errors: tuple[str, ...]

    def state(self, i: int) -> Any:
        """Turn ``i``'s reference state as a value (only a failed state check needs it)."""
        return json.loads(self.spelled[i])


_REFERENCES: dict[tuple[int, type], tuple[weakref.ref, _Reference | None]] = {}


def _reference(task: Task, backend_cls: type[Backend]) -> tuple[_Reference | None, list[dict[str, Any]], list[str]]:
    """The reference of ``task``: replayed at the first episode's end, then cached for as long as
    the task object lives (tasks are immutable values; ``generate`` and BFCL keep theirs).

    Before issue 16 the plan was replayed at every episode's end. A task whose reference states
    JSON cannot spell exactly (a tuple, a non-string key, NaN) is not cached and replays every
    time, as before. Returns the cached reference, or None and the replayed states and errors."""
    key = (id(task), backend_cls)
    entry = _REFERENCES.get(key)
    if entry is not None and entry[0]() is task:
        if entry[1] is not None:
            return entry[1], [], []
        states, errors = _reference_replay(task, backend_cls)
        return None, states, errors
    states, errors = _reference_replay(task, backend_cls)
    try:
        spelled = tuple(canonical_json(s) for s in states)
        exact = all(json.loads(text) == s for text, s in zip(spelled, states))
    except (TypeError, ValueError):
        exact = False
    ref = _Reference(spelled, tuple(errors)) if exact else None
    _REFERENCES[key] = (weakref.ref(task, lambda _, key=key: _REFERENCES.pop(key, None)), ref)
    return (ref, [], []) if ref is not None else (None, states, errors)


def _turn_checks(i: int, turn: Any, expected: dict[str, Any] | _Reference, actual: dict[str, Any] | None,
                 answer: str, record: EpisodeRecord) -> tuple[list[Check], CheckOutcome, CheckOutcome]:
    """The checks of one turn, and the outcomes of its state side (state, withheld value,
    policy: what the service was left with) and its response side (the answer's content).
    ``expected`` is the reference state, or the cached reference that spells it."""
    error = ""
    if actual is None:
        state_checks = [Check(f"state_turn_{i}", False, "turn not reached", i)]
    else:
        if isinstance(expected, _Reference):
            same, error = guarded(lambda: canonical_json(actual) == expected.spelled[i])
            if not same and not error:
                expected = expected.state(i)
        else:
            same, error = guarded(lambda: canonical_json(actual) == canonical_json(expected))
        detail = f"checker error: {error}" if error else "" if same else _first_difference(expected, actual)
        state_checks = [Check(f"state_turn_{i}", bool(same) and not error, detail, i)]
    response_checks = []
    if turn.required_outputs:
        missing = [r for r in turn.required_outputs if not answer_contains(answer, r)]
        response_checks.append(Check(f"response_turn_{i}", not missing, f"answer lacks {missing}" if missing else "", i))
    if turn.withheld is not None:
        guessed = i in record.guessed_withheld
        state_checks.append(Check(f"asked_withheld_turn_{i}", not guessed,
                                  f"used '{turn.withheld.param}' before asking the user" if guessed else "", i))
    violations = [rule for t, rule in record.violations if t == i]
    state_checks.append(Check(f"no_violation_turn_{i}", not violations,
                              f"violated {sorted(set(violations))}" if violations else "", i))
    state = CHECK_ERROR if error else CHECK_PASS if all(c.passed for c in state_checks) else CHECK_FAIL
    response = CHECK_PASS if all(c.passed for c in response_checks) else CHECK_FAIL
    checks = state_checks[:1] + response_checks + state_checks[1:]
    return checks, state, response


def verify(task: Task, backend_cls: type[Backend], record: EpisodeRecord) -> Verdict:
    """Every check of every user turn, and the facts the official per-turn tags are read from.

    For the official tags a native turn has one service instance (never an instance mismatch);
    its state side is the state, withheld-value and policy checks, its response side the
    answer check; a call is any call that reached the service in the turn."""
    cached, expected, gt_errors = _reference(task, backend_cls)
    if cached is not None:
        expected, gt_errors = [cached] * len(task.turns), list(cached.errors)
    return verify_states(task, expected, gt_errors, record)


def verify_states(task: Task, expected: list[Any], gt_errors: list[str], record: EpisodeRecord) -> Verdict:
    """The checks of :func:`verify` against reference states a source obtained itself (an MCP
    server's replay, which is not a backend class the cache above could key): ``expected[i]``
    is the reference state after user turn ``i``, ``gt_errors[i]`` why its replay raised."""
    checks: list[Check] = []
    turns_passed: list[bool] = []
    facts: list[TurnFacts] = []
    for i, turn in enumerate(task.turns):
        actual = record.turn_states[i] if i < len(record.turn_states) else None
        answer = record.turn_answers[i] if i < len(record.turn_answers) else ""
        calls = len(record.turn_results[i]) if actual is not None and i < len(record.turn_results) else 0
        if gt_errors[i]:
            turn_checks = [Check(f"state_turn_{i}", False, f"ground truth raised: {gt_errors[i]}", i)]
            state = response = CHECK_FAIL
        else:
            turn_checks, state, response = _turn_checks(i, turn, expected[i], actual, answer, record)
        facts.append(TurnFacts(not turn.plan, calls, gt_error=bool(gt_errors[i]), state=state, response=response))
        checks.extend(turn_checks)
        turns_passed.append(all(c.passed for c in turn_checks))
    progress = sum(turns_passed) / len(turns_passed) if turns_passed else 0.0
    return Verdict(tuple(checks), progress, tuple(turns_passed), tuple(facts))
