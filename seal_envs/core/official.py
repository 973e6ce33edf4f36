"""The official SEAL failure tags: one tag per ground-truth *user turn*, and official progress.

Why a second tagging next to the per-step labels of :mod:`seal_envs.core.diagnosis`: the paper's
A-Patch scale is the mean tag weight over a trajectory's tags, so its value depends on what is
counted. The official code counts user turns of the ground truth (turns the episode never
reached included, as turns without calls), not assistant steps, so only tags counted that way
give the official scale. The rules (``SEAL-OFFICIAL.md``; ``docs/diagnosis.md``), first match
wins, for each user turn:

1. the ground truth of the turn raised when replayed: ``gt_error``;
2. the ground truth of the turn is empty: ``spurious_tool_call`` when the agent made a call in
   the turn, else ``correct_abstention`` (not scorable for progress);
3. the agent made no call in the turn: ``empty_turn_model_response``;
4. the set of service instances differs from the ground truth's: ``instance_mismatch``;
5. the state checker raised: ``checker_error``; it failed: ``state_mismatch``;
6. the response checker raised: ``checker_error``; it failed: ``response_mismatch``;
7. ``pass``.

Official progress = passed turns / scorable turns (turns with a non-empty ground truth; 0.0 when
there are none). Everything here is pure: the verifiers gather the :class:`TurnFacts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal, Sequence, TypeVar

from .types import StepLabel

__all__ = ["ABSTENTION_TAGS", "CHECK_ERROR", "CHECK_FAIL", "CHECK_PASS", "OFFICIAL_TAGS", "OFFICIAL_TAG_OF_LABEL",
           "OfficialScore", "TurnFacts", "guarded", "official_score", "official_tag_of_step", "official_tag_of_turn"]

OFFICIAL_TAGS = ("pass", "correct_abstention", "spurious_tool_call", "empty_turn_model_response",
                 "instance_mismatch", "state_mismatch", "response_mismatch", "checker_error", "gt_error")
#: The official tag each per-step label of :mod:`seal_envs.core.diagnosis` maps to (one vocabulary:
#: every value is in ``OFFICIAL_TAGS``).
OFFICIAL_TAG_OF_LABEL = {
    "ok": "pass",
    "format_error": "empty_turn_model_response",
    "unknown_tool": "spurious_tool_call",
    "schema_violation": "instance_mismatch",
    "arg_mismatch": "instance_mismatch",
    "constraint_violation": "state_mismatch",
    "missing_call": "state_mismatch",
    "spurious_call": "spurious_tool_call",
    "wrong_order": "state_mismatch",
    "redundant_call": "spurious_tool_call",
    "recovery_failure": "state_mismatch",
    "response_mismatch": "response_mismatch",
    "premature_end": "empty_turn_model_response",
    "env_error": "checker_error",
}

#: Tags of turns with an empty ground truth: never scorable for progress.
ABSTENTION_TAGS = frozenset({"spurious_tool_call", "correct_abstention"})

T = TypeVar("T")
CheckOutcome = Literal["pass", "fail", "error"]
CHECK_PASS: CheckOutcome = "pass"
CHECK_FAIL: CheckOutcome = "fail"
CHECK_ERROR: CheckOutcome = "error"


@dataclass(frozen=True)
class TurnFacts:
    """What the official rules read about one ground-truth user turn.

    ``model_calls`` counts the calls that reached the service in the turn (0 for a turn the
    episode never reached); ``state`` and ``response`` are the outcomes of the two checkers,
    which matter only when the earlier rules did not decide the tag.
    """

    gt_empty: bool
    model_calls: int
    gt_error: bool = False
    instances_match: bool = True
    state: CheckOutcome = CHECK_PASS
    response: CheckOutcome = CHECK_PASS

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def official_tag_of_turn(facts: TurnFacts) -> str:
    """The one official tag of a turn (the module doc lists the rules in order)."""
    if facts.gt_error:
        return "gt_error"
    if facts.gt_empty:
        return "spurious_tool_call" if facts.model_calls > 0 else "correct_abstention"
    if facts.model_calls == 0:
        return "empty_turn_model_response"
    if not facts.instances_match:
        return "instance_mismatch"
    for outcome, failed in ((facts.state, "state_mismatch"), (facts.response, "response_mismatch")):
        if outcome == CHECK_ERROR:
            return "checker_error"
        if outcome == CHECK_FAIL:
            return failed
    return "pass"


@dataclass(frozen=True)
class OfficialScore:
    """The tags of an episode's user turns and its official progress."""

    tags: tuple[str, ...]
    passed_turns: int
    scorable_turns: int

    @property
    def progress(self) -> float:
        return self.passed_turns / self.scorable_turns if self.scorable_turns else 0.0


def official_tag_of_step(label: StepLabel) -> str:
    """The SEAL tag of a label; a correct abstention (ending a turn that needed no call, or
    asking for a withheld value) is the official ``correct_abstention``."""
    if label.label == "ok" and label.abstention:
        return "correct_abstention"
    return OFFICIAL_TAG_OF_LABEL[label.label]


def official_score(facts: Sequence[TurnFacts]) -> OfficialScore:
    """Tag every turn; a ``gt_error`` turn stays scorable (and failed), as in the official code."""
    tags = tuple(official_tag_of_turn(f) for f in facts)
    scorable = [t for t in tags if t not in ABSTENTION_TAGS]
    return OfficialScore(tags, sum(t == "pass" for t in scorable), len(scorable))


def guarded(check: Callable[[], T]) -> tuple[T | None, str]:
    """Run one checker so that an exception becomes the ``error`` outcome (``checker_error``)
    instead of ending the verification: ``(value, "")`` or ``(None, "Type: message")``."""
    try:
        return check(), ""
    except Exception as e:  # noqa: BLE001 - a checker failure is the checker's fault, never the agent's
        return None, f"{type(e).__name__}: {e}"
