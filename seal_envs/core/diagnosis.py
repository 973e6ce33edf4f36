"""Turn-level failure diagnosis: one label per assistant step, the shared signal of SEAL.

Two passes. :func:`immediate_label` needs only the step and what came before it (the env puts
it in ``info["step_label"]`` right away). :func:`diagnose` runs at the episode end: it aligns the
agent's successful calls in each user turn with that turn's reference calls and the verifier's
checks, and relabels the steps whose fault only shows then (a missing call, a wrong argument
that executed, a spurious write, a wrong order, an answer that lacks what the user asked).

The taxonomy (``LABELS``) and its mapping onto the official SEAL tags (``seal_envs.core.official.OFFICIAL_TAG_OF_LABEL``)
are documented in ``docs/diagnosis.md``. An LLM grader can replace the rules: any callable with the
signature of :func:`diagnose` (see :data:`Diagnoser`).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from .types import StepLabel, StepRecord, Task, ToolCall, ToolSpec, Verdict

LABELS = (
    "ok", "format_error", "unknown_tool", "schema_violation", "arg_mismatch", "constraint_violation",
    "missing_call", "spurious_call", "wrong_order", "redundant_call", "recovery_failure",
    "response_mismatch", "premature_end", "env_error",
)

# When several faults show in one step, the primary label is the earliest in this list.
SEVERITY = ("env_error", "format_error", "unknown_tool", "constraint_violation", "recovery_failure",
            "schema_violation", "spurious_call", "arg_mismatch", "wrong_order", "missing_call",
            "premature_end", "response_mismatch", "redundant_call", "ok")

_EVENT_LABEL = {
    "unknown_tool": "unknown_tool",
    "unavailable_tool": "spurious_call",
    "schema_violation": "schema_violation",
    "policy_violation": "constraint_violation",
    "tool_error": "arg_mismatch",
    "env_error": "env_error",
}

Diagnoser = Callable[[Task, Sequence[StepRecord], Verdict, Mapping[str, ToolSpec]], list[StepLabel]]


def _worst(labels: Sequence[StepLabel]) -> StepLabel:
    if len(labels) == 1 and len(set(labels[0].secondary)) == len(labels[0].secondary):
        return labels[0]  # what the merge below would rebuild, field for field (the usual case)
    ranked = sorted(labels, key=lambda lb: SEVERITY.index(lb.label))
    head = ranked[0]
    rest = tuple(dict.fromkeys(lb.label for lb in ranked[1:] if lb.label not in ("ok", head.label)))
    return StepLabel(head.label, head.tool, head.param, head.error_kind, head.turn,
                     tuple(dict.fromkeys(head.secondary + rest)), head.abstention, head.detail)


def _failed_calls(step: StepRecord) -> set[str]:
    return {c.key() for c, e in zip(step.calls, step.events) if not e.ok}


def immediate_label(step: StepRecord, history: Sequence[StepRecord]) -> StepLabel:
    """The label visible as soon as the step is taken."""
    t = step.turn
    if step.format_error is not None:
        return StepLabel("format_error", turn=t, error_kind="format_error", detail=step.format_error)
    if not step.calls:
        return StepLabel("ok", turn=t, abstention=step.asked_withheld)
    if len(step.calls) == 1 and not step.guessed_withheld and step.events[0].kind == "ok":
        return _one_ok_call(step.calls[0], t, history)  # most steps: what _calls_label gives them
    return _calls_label(step, history)


def _calls_label(step: StepRecord, history: Sequence[StepRecord]) -> StepLabel:
    """The worst label of a step's calls, each against the failures and successes before it."""
    t = step.turn
    prev = history[-1] if history else None
    repeated = _failed_calls(prev) if prev is not None and prev.turn == t else set()
    # the keys of this turn's earlier successes, spelt only for the tools a success here may
    # repeat (a key is a JSON dump, and this runs every step: spelling every earlier call of
    # the turn made a long turn quadratic); a key names its tool, so others cannot match
    ok_names = {c.name for c, e in zip(step.calls, step.events) if e.ok} if not step.guessed_withheld else set()
    earlier_ok = {c.key() for h in history if h.turn == t for c, e in zip(h.calls, h.events)
                  if e.ok and c.name in ok_names} if ok_names else set()
    labels = []
    for call, event in zip(step.calls, step.events):
        if not event.ok and repeated and call.key() in repeated:
            labels.append(StepLabel("recovery_failure", call.name, event.param, event.kind, t,
                                    detail="repeated a call that had just failed"))
        elif not event.ok:
            labels.append(StepLabel(_EVENT_LABEL[event.kind], call.name, event.param, event.kind, t,
                                    detail=event.message))
        elif step.guessed_withheld:
            labels.append(StepLabel("spurious_call", call.name, turn=t, secondary=("guessed_withheld",),
                                    detail="used a value the user had not given yet"))
        elif earlier_ok and call.key() in earlier_ok:
            labels.append(StepLabel("redundant_call", call.name, turn=t, detail="same call already succeeded"))
        else:
            labels.append(StepLabel("ok", call.name, turn=t))
    return _worst(labels)


def _one_ok_call(call: ToolCall, turn: int, history: Sequence[StepRecord]) -> StepLabel:
    """The immediate label of a step of one successful call: redundant if the same call already
    succeeded in this user turn, else ok. Keys are spelt only when a same-name success exists."""
    earlier = [c for h in history if h.turn == turn for c, e in zip(h.calls, h.events)
               if c.name == call.name and e.kind == "ok"]
    if earlier:
        key = call.key()
        if any(c.key() == key for c in earlier):
            return StepLabel("redundant_call", call.name, turn=turn, detail="same call already succeeded")
    return StepLabel("ok", call.name, turn=turn)


def _turn_steps(steps: Sequence[StepRecord], turn: int) -> list[int]:
    return [i for i, s in enumerate(steps) if s.turn == turn]


def _relabel(labels: list[StepLabel], i: int, new: StepLabel) -> None:
    labels[i] = _worst([labels[i], new])


def _align_turn(task: Task, steps: Sequence[StepRecord], labels: list[StepLabel], turn: int,
                verdict: Verdict, specs: Mapping[str, ToolSpec]) -> None:
    idx = _turn_steps(steps, turn)
    plan = list(task.turns[turn].plan) if turn < len(task.turns) else []
    state_ok = any(c.name == f"state_turn_{turn}" and c.passed for c in verdict.checks)
    response_ok = all(c.passed for c in verdict.checks if c.name == f"response_turn_{turn}")
    unmatched = list(range(len(plan)))
    plan_keys = [c.key() for c in plan]  # calls compare by key: spell each once, not per comparison
    matched_order: list[tuple[int, int]] = []  # (plan index, step index)
    for i in idx:
        for call, event in zip(steps[i].calls, steps[i].events):
            key = call.key() if unmatched else None
            hit = next((p for p in unmatched if plan_keys[p] == key), None)
            if not event.ok:
                if hit is not None and any(q < hit for q in unmatched):  # the right call, made too early
                    labels[i] = StepLabel("wrong_order", call.name, event.param, event.kind, turn,
                                          (labels[i].label,), detail="a call that depends on an earlier one came first")
                continue
            if hit is not None:
                unmatched.remove(hit)
                matched_order.append((hit, i))
            elif any(plan[p].name == call.name for p in unmatched) and not state_ok:
                _relabel(labels, i, StepLabel("arg_mismatch", call.name, turn=turn,
                                              detail="valid call, but not with the values the task needs"))
            elif not plan or (not state_ok and specs.get(call.name) and specs[call.name].writes):
                _relabel(labels, i, StepLabel("spurious_call", call.name, turn=turn,
                                              detail="no such call was due in this turn"))
    if not state_ok:
        for (p1, s1), (p2, s2) in zip(matched_order, matched_order[1:]):
            if p2 < p1:
                _relabel(labels, s2, StepLabel("wrong_order", steps[s2].calls[0].name, turn=turn,
                                               detail="a call that depends on an earlier one came first"))
    ends = [i for i in idx if steps[i].ends_turn]
    if not ends:
        return
    end = ends[-1]
    made_calls = any(steps[i].calls for i in idx if i < end)
    if plan and not made_calls and not (state_ok and response_ok):
        _relabel(labels, end, StepLabel("premature_end", plan[0].name, turn=turn,
                                        detail="ended the turn without doing the work"))
    elif not state_ok and unmatched:
        missing = plan[unmatched[0]].name
        prior_error = [i for i in idx if i < end and steps[i].calls and not all(e.ok for e in steps[i].events)]
        if prior_error and prior_error[-1] == max(i for i in idx if i < end and steps[i].calls):
            kind = next(e.kind for e in steps[prior_error[-1]].events if not e.ok)
            label = StepLabel("recovery_failure", missing, error_kind=kind, turn=turn, detail="gave up after an error")
        else:
            label = StepLabel("missing_call", missing, turn=turn, detail="ended the turn with required work undone")
        _relabel(labels, end, label)
    elif not response_ok:
        _relabel(labels, end, StepLabel("response_mismatch", turn=turn, detail="the answer lacks what the user asked"))
    elif not plan and not made_calls and labels[end].label == "ok":  # a call in a no-call turn is
        labels[end] = StepLabel("ok", turn=turn, abstention=True)      # spurious, never also an abstention


def diagnose(task: Task, steps: Sequence[StepRecord], verdict: Verdict,
             specs: Mapping[str, ToolSpec], truncated: bool = False,
             immediate: Sequence[StepLabel] | None = None) -> list[StepLabel]:
    """Final labels, one per step, aligned with the actions taken. ``immediate``: the
    :func:`immediate_label` of every step, when the caller kept them as the steps were taken."""
    if immediate is not None and len(immediate) == len(steps):
        labels = list(immediate)
    else:
        labels = [immediate_label(s, steps[:i]) for i, s in enumerate(steps)]
    for turn in sorted({s.turn for s in steps}):
        _align_turn(task, steps, labels, turn, verdict, specs)
    if truncated and not verdict.passed and labels and labels[-1].label == "ok":
        labels[-1] = StepLabel("premature_end", turn=labels[-1].turn, detail="ran out of steps")
    return labels
