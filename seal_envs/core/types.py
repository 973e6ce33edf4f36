"""Plain values that flow between the layers.

Everything here is a frozen dataclass or a JSON-compatible dict so that a task, a call or a
verdict can cross a process boundary (vector envs, ``accelerate``) and compare by value.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping


# What json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")) builds
# afresh at every call; made once, since every call and state is spelt this way (issue 16).
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))
#: The exact types of JSON's scalar values: copied by being shared, and given back as they were by
#: the canonical JSON round trip (a float may be inf or nan: both spell and read back as themselves).
JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def canonical_json(value: Any) -> str:
    """One spelling per value: how calls and states are compared and hashed."""
    return _CANONICAL.encode(value)


# ``json.dumps(value, ensure_ascii=False)`` builds a new encoder at every call (only the
# all-defaults spelling reuses one): a third of its time for the small values a step spells
_TEXT = json.JSONEncoder(ensure_ascii=False)


def text_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``: how results and call arguments read in a transcript."""
    return _TEXT.encode(value)


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the canonical surface describes it (JSON Schema parameters)."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    writes: bool = False
    policies: tuple[str, ...] = ()

    def to_openai(self, description: str | None = None, parameters: Mapping[str, Any] | None = None) -> dict:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description if description is None else description,
                "parameters": dict(self.parameters if parameters is None else parameters),
            },
        }


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        return canonical_json({"name": self.name, "arguments": dict(self.arguments)})

    def to_dict(self) -> dict:
        """A plain copy with the arguments' keys sorted, as the canonical JSON spells them."""
        args = self.arguments
        if all(type(k) is str and type(v) in JSON_SCALARS for k, v in args.items()):  # the common flat call
            return {"name": self.name, "arguments": {k: args[k] for k in sorted(args)}}
        return {"name": self.name, "arguments": json.loads(canonical_json(dict(args)))}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "ToolCall":
        return ToolCall(str(d["name"]), dict(d.get("arguments", {})))

    def __hash__(self) -> int:
        return hash(self.key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCall) and self.key() == other.key()


@dataclass(frozen=True)
class Withheld:
    """A value the user leaves out of the request and gives only when asked (BFCL miss_param)."""

    param: str
    value: Any
    reply: str


@dataclass(frozen=True)
class UserTurn:
    """One user message, what it requires, and how the reference solves it."""

    message: str
    plan: tuple[ToolCall, ...] = ()
    required_outputs: tuple[str, ...] = ()
    withheld: Withheld | None = None
    new_tools: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "message": self.message,
            "plan": [c.to_dict() for c in self.plan],
            "required_outputs": list(self.required_outputs),
            "withheld": None if self.withheld is None else vars(self.withheld).copy(),
            "new_tools": list(self.new_tools),
        }

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "UserTurn":
        w = d.get("withheld")
        return UserTurn(
            message=d["message"],
            plan=tuple(ToolCall.from_dict(c) for c in d.get("plan", ())),
            required_outputs=tuple(d.get("required_outputs", ())),
            withheld=None if w is None else Withheld(**w),
            new_tools=tuple(d.get("new_tools", ())),
        )


@dataclass(frozen=True)
class Task:
    """A seeded episode: initial state, scripted user turns, reference plan per turn.

    ``initial_state`` is shared by every episode of the task and must never be mutated: the
    env hands each episode a deep copy.
    """

    task_id: str
    domain: str
    split: str
    seed: int
    difficulty: int
    initial_state: Mapping[str, Any]
    turns: tuple[UserTurn, ...]
    template: str = ""
    hidden_tools: tuple[str, ...] = ()

    @property
    def plan(self) -> tuple[ToolCall, ...]:
        return tuple(c for t in self.turns for c in t.plan)

    def to_dict(self) -> dict:
        return {
            "task_id": self.task_id,
            "domain": self.domain,
            "split": self.split,
            "seed": self.seed,
            "difficulty": self.difficulty,
            "template": self.template,
            "hidden_tools": list(self.hidden_tools),
            "initial_state": json.loads(canonical_json(dict(self.initial_state))),
            "turns": [t.to_dict() for t in self.turns],
        }

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "Task":
        return Task(
            task_id=d["task_id"],
            domain=d["domain"],
            split=d["split"],
            seed=int(d["seed"]),
            difficulty=int(d["difficulty"]),
            initial_state=d["initial_state"],
            turns=tuple(UserTurn.from_dict(t) for t in d["turns"]),
            template=d.get("template", ""),
            hidden_tools=tuple(d.get("hidden_tools", ())),
        )


#: Every ``CallEvent.kind`` but ``ok``: the scopes of the surface's recovery channel.
ERROR_KINDS = ("format_error", "unknown_tool", "unavailable_tool", "schema_violation", "policy_violation",
               "tool_error", "env_error")


@dataclass(frozen=True)
class CallEvent:
    """What happened when one call was attempted, before any surface renders it.

    ``kind``: ok, format_error, unknown_tool, unavailable_tool, schema_violation,
    policy_violation, tool_error or env_error.
    """

    kind: str
    tool: str | None = None
    param: str | None = None
    message: str = ""
    result: Any = None
    rule: str | None = None
    hint: str | None = None
    # ``text_json(result)`` when the backend already spelled it (BFCL's executor spells every dict
    # result, and spelling floats twice was a fifth of a long-context episode): not part of the
    # event's value, so neither compared nor in ``to_dict``
    result_json: str | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    def to_dict(self) -> dict:
        return {k: v for k, v in vars(self).items()
                if v is not None and v != "" and k != "result_json"} | {"kind": self.kind}


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str = ""
    turn: int | None = None


@dataclass(frozen=True)
class Verdict:
    """Every check with pass/fail, and the fraction of user turns passed."""

    checks: tuple[Check, ...]
    progress: float
    turns_passed: tuple[bool, ...]
    # per user turn, what the official SEAL tags are read from (seal_envs.core.official.TurnFacts)
    turn_facts: tuple[Any, ...] = ()

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed_checks(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.passed)

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "progress": self.progress,
            "turns_passed": list(self.turns_passed),
            "checks": [vars(c).copy() for c in self.checks],
        }


@dataclass(frozen=True)
class StepLabel:
    """The diagnosis of one assistant step (one action)."""

    label: str
    tool: str | None = None
    param: str | None = None
    error_kind: str | None = None
    turn: int = 0
    secondary: tuple[str, ...] = ()
    abstention: bool = False
    detail: str = ""

    def to_dict(self) -> dict:
        d = {k: v for k, v in vars(self).items() if v not in (None, "", ())}
        d["label"] = self.label
        d["turn"] = self.turn
        if self.secondary:
            d["secondary"] = list(self.secondary)
        return d

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "StepLabel":
        d = dict(d)
        d["secondary"] = tuple(d.get("secondary", ()))
        return StepLabel(**d)


@dataclass(frozen=True)
class StepRecord:
    """One assistant action as the env saw it: what diagnosis reads."""

    turn: int
    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    events: tuple[CallEvent, ...] = ()
    format_error: str | None = None
    ends_turn: bool = False
    asked_withheld: bool = False
    guessed_withheld: bool = False
