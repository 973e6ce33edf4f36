"""Executable verification, per user turn, in the manner of BFCL's multi-turn checker.

The reference plan is replayed on a fresh copy of the initial state; after each user turn the
agent's state must equal the reference state (state check), the agent's words to the user must
contain what the user asked for (response check), no policy may have been violated, and a value
the user withheld must have been asked for rather than guessed. Progress is the fraction of user
turns whose checks all passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .backend import Backend
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


def verify(task: Task, backend_cls: type[Backend], record: EpisodeRecord) -> Verdict:
    expected = reference_states(task, backend_cls)
    checks: list[Check] = []
    turns_passed: list[bool] = []
    for i, turn in enumerate(task.turns):
        actual = record.turn_states[i] if i < len(record.turn_states) else None
        answer = record.turn_answers[i] if i < len(record.turn_answers) else ""
        turn_checks = []
        if actual is None:
            turn_checks.append(Check(f"state_turn_{i}", False, "turn not reached", i))
        else:
            same = canonical_json(actual) == canonical_json(expected[i])
            detail = "" if same else _first_difference(expected[i], actual)
            turn_checks.append(Check(f"state_turn_{i}", same, detail, i))
        if turn.required_outputs:
            missing = [r for r in turn.required_outputs if not answer_contains(answer, r)]
            turn_checks.append(Check(f"response_turn_{i}", not missing,
                                     f"answer lacks {missing}" if missing else "", i))
        if turn.withheld is not None:
            guessed = i in record.guessed_withheld
            turn_checks.append(Check(f"asked_withheld_turn_{i}", not guessed,
                                     f"used '{turn.withheld.param}' before asking the user" if guessed else "", i))
        violations = [rule for t, rule in record.violations if t == i]
        turn_checks.append(Check(f"no_violation_turn_{i}", not violations,
                                 f"violated {sorted(set(violations))}" if violations else "", i))
        checks.extend(turn_checks)
        turns_passed.append(all(c.passed for c in turn_checks))
    progress = sum(turns_passed) / len(turns_passed) if turns_passed else 0.0
    return Verdict(tuple(checks), progress, tuple(turns_passed))

