"""Per-user-turn verification with the semantics of bfcl-eval's ``multi_turn_checker``.

The ground truth of each turn is replayed on fresh instances (cumulatively, turn after turn, as
bfcl-eval's executor does), then for every user turn with ground-truth calls:

- ``state_turn_i``: the public attributes of every instance equal the ground truth's
  (``state_checker``). It also fails when the agent made no call at all in the turn, which
  bfcl-eval reports first as ``empty_turn_model_response``.
- ``response_turn_i``: every result text of the turn's ground-truth calls is among the result
  texts of all the agent's calls so far, as a multiset and in any order (``response_checker``).

A turn whose ground truth is empty has no state or response check (bfcl-eval skips it too; its
effect shows at the next turn's state). With ``irrelevance`` on, such a turn must also hold no
call at all: ``irrelevance_turn_i``, the rule of ``multi_turn_irrelevance_checker``; by default
it is on for miss_func, where the requested function is missing until the next turn.

bfcl-eval stops at the first failing turn; here every turn is checked, so the verdict carries
per-turn progress while ``passed`` is the same all-turns verdict. A turn the episode never
reached fails (bfcl-eval: ``force_terminated``).

The verdict also carries, per user turn, the :class:`~seal_envs.core.official.TurnFacts` that
the official SEAL tags are read from; a checker that raises fails its check (``checker_error``)
instead of ending the verification.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from seal_envs.core.official import CHECK_ERROR, CHECK_FAIL, CHECK_PASS, CheckOutcome, TurnFacts, guarded
from seal_envs.core.types import Check, Task, Verdict
from seal_envs.core.verifier import EpisodeRecord

from .backend import RESPONSES_KEY, BFCLBackend

_MISSING = object()


@dataclass(frozen=True)
class Reference:
    """What the ground truth leaves after each turn, the texts its calls return, and, per turn,
    why its replay raised ("" when it did not: the official ``gt_error``)."""

    states: tuple[dict[str, Any], ...]
    results: tuple[tuple[str, ...], ...]
    errors: tuple[str, ...] = ()


def reference(task: Task) -> Reference:
    """Replay the reference plan (the ground truth) turn after turn on fresh instances; a turn
    whose replay raises is recorded and the replay goes on, as the official scorer does."""
    backend = BFCLBackend(task.initial_state)
    states, results, errors = [], [], []
    for turn in task.turns:
        start = len(backend.responses)
        _, error = guarded(lambda plan=turn.plan: [backend.execute(call, copy_result=False) for call in plan])
        state = backend.comparable_state()
        results.append(tuple(state.pop(RESPONSES_KEY)[start:]))
        states.append(state)
        errors.append(error)
    return Reference(tuple(states), tuple(results), tuple(errors))


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first_difference(expected: Any, actual: Any, path: str) -> str:
    """Where two unequal values first differ, descending into dicts and same-length lists."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in list(expected) + [k for k in actual if k not in expected]:
            if key not in actual:
                return f"{path}/{key} missing"
            if key not in expected:
                return f"{path}/{key} unexpected"
            if expected[key] != actual[key]:
                return _first_difference(expected[key], actual[key], f"{path}/{key}")
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for i, (e, a) in enumerate(zip(expected, actual)):
            if e != a:
                return _first_difference(e, a, f"{path}/{i}")
    return f"{path}: expected {_short(expected)}, got {_short(actual)}"


def state_difference(expected: dict[str, Any], actual: dict[str, Any]) -> str:
    """Each attribute that differs (``Class.attr``: where and how); empty when the states match."""
    diffs = []
    for cls, attrs in expected.items():
        got = actual.get(cls, {})
        for name, value in attrs.items():
            other = got.get(name, _MISSING)
            if other is _MISSING:
                diffs.append(f"{cls}.{name} missing")
            elif other != value:
                diffs.append(_first_difference(value, other, f"{cls}.{name}"))
    return "; ".join(diffs)


def missing_results(expected: Sequence[str], actual: Sequence[str]) -> list[str]:
    """The expected texts not found in ``actual``, each occurrence used once, order ignored."""
    return list((Counter(expected) - Counter(actual)).elements())


def _state_check(i: int, expected: dict[str, Any], state: dict[str, Any]) -> tuple[Check, CheckOutcome]:
    diff, error = guarded(lambda: state_difference(expected, state))
    if error:
        return Check(f"state_turn_{i}", False, f"checker error: {error}", i), CHECK_ERROR
    return Check(f"state_turn_{i}", not diff, diff, i), CHECK_FAIL if diff else CHECK_PASS


def _response_check(i: int, expected: Sequence[str], state: dict[str, Any]) -> tuple[Check, CheckOutcome]:
    missing, error = guarded(lambda: missing_results(expected, state[RESPONSES_KEY]))
    if error:
        return Check(f"response_turn_{i}", False, f"checker error: {error}", i), CHECK_ERROR
    detail = f"missing results: {_short(missing, 240)}" if missing else ""
    return Check(f"response_turn_{i}", not missing, detail, i), CHECK_FAIL if missing else CHECK_PASS


def _turn_checks(i: int, plan_empty: bool, ref: Reference, state: dict[str, Any] | None,
                 n_calls: int, irrelevance: bool) -> tuple[list[Check], TurnFacts]:
    gt_error = ref.errors[i] if i < len(ref.errors) else ""
    facts = TurnFacts(plan_empty, n_calls, gt_error=bool(gt_error))
    if state is None:
        return [Check(f"state_turn_{i}", False, "turn not reached", i)], facts
    if gt_error:
        return [Check(f"state_turn_{i}", False, f"ground truth raised: {gt_error}", i)], facts
    if plan_empty:
        if not irrelevance:
            return [], facts
        detail = "" if n_calls == 0 else f"made {n_calls} call(s) in a turn that should have none"
        return [Check(f"irrelevance_turn_{i}", n_calls == 0, detail, i)], facts
    response_check, response = _response_check(i, ref.results[i], state)
    if n_calls == 0:
        state_check = Check(f"state_turn_{i}", False, "empty_turn_model_response: no call in a turn that needs calls", i)
        return [state_check, response_check], facts
    state_check, outcome = _state_check(i, ref.states[i], state)
    instances = set(state) - {RESPONSES_KEY}
    facts = TurnFacts(False, n_calls, instances_match=bool(ref.states[i]) and instances == set(ref.states[i]),
                      state=outcome, response=response)
    return [state_check, response_check], facts


def check(task: Task, record: EpisodeRecord, ref: Reference, irrelevance: bool) -> Verdict:
    """The verdict of an episode (``record``) against the replayed ground truth (``ref``), with
    the facts of every user turn that the official tags are read from."""
    checks: list[Check] = []
    turns_passed: list[bool] = []
    facts: list[TurnFacts] = []
    before = 0
    for i, turn in enumerate(task.turns):
        state = record.turn_states[i] if i < len(record.turn_states) else None
        n_calls = 0 if state is None else len(state[RESPONSES_KEY]) - before
        turn_checks, turn_facts = _turn_checks(i, not turn.plan, ref, state, n_calls, irrelevance)
        if state is not None:
            before = len(state[RESPONSES_KEY])
        checks.extend(turn_checks)
        facts.append(turn_facts)
        turns_passed.append(all(c.passed for c in turn_checks))
    progress = sum(turns_passed) / len(turns_passed) if turns_passed else 0.0
    return Verdict(tuple(checks), progress, tuple(turns_passed), tuple(facts))
