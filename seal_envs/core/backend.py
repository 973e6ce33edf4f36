"""The base class every domain's in-memory service subclasses.

Tools are ordinary typed methods marked with :func:`tool`; their signature and docstring
generate the JSON Schema (tau-bench style), so a domain states each tool once. Dispatch goes
by name through a whitelist built from those methods: model text never reaches ``getattr`` on
anything else, and nothing is evaluated. A call that fails leaves the state exactly as it was:
a snapshot of the state (``marshal`` bytes, see :mod:`.datacopy`) is taken before every call and
restored when the call fails; results and compared states are deep copies, so nothing the
agent or the verifier holds aliases the live state.
"""

from __future__ import annotations

import difflib
import inspect
import re
import types
import typing
from typing import Any, Callable, ClassVar, Iterable, Literal, Mapping

from .calls import ParsedAction, parse_action
from .datacopy import Snapshot, deep_copy
from .types import CallEvent, ToolCall, ToolSpec
from .validation import schema_typed, validate_arguments

_TOOL_ATTR = "__seal_tool__"


class ToolError(Exception):
    """A well-formed call the service cannot carry out (not found, insufficient funds...)."""

    def __init__(self, message: str, param: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.param = param
        self.hint = hint


class PolicyViolation(Exception):
    """A call the domain's policy forbids. ``rule`` is a key of the backend's ``POLICIES``."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule


def tool(
    fn: Callable | None = None,
    *,
    writes: bool = False,
    policies: tuple[str, ...] = (),
    schema: Mapping[str, Mapping[str, Any]] | None = None,
):
    """Mark a backend method as a tool. ``schema`` adds JSON Schema keywords per parameter."""

    def mark(f: Callable) -> Callable:
        setattr(f, _TOOL_ATTR, {"writes": writes, "policies": tuple(policies), "schema": dict(schema or {})})
        return f

    return mark(fn) if fn is not None else mark


_PY_TO_JSON = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


def _json_type(hint: Any) -> dict:
    origin = typing.get_origin(hint)
    if origin is Literal:
        values = list(typing.get_args(hint))
        return {"type": _PY_TO_JSON[type(values[0])], "enum": values}
    if origin in (list, tuple, Iterable):
        (item,) = typing.get_args(hint)[:1] or (str,)
        return {"type": "array", "items": _json_type(item)}
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _json_type(args[0])
    if hint in _PY_TO_JSON:
        return {"type": _PY_TO_JSON[hint]}
    raise TypeError(f"unsupported tool parameter type {hint!r}")


def _doc_sections(doc: str) -> tuple[str, dict[str, str]]:
    """First paragraph is the description; ``Args:`` lines ``name: text`` describe parameters."""
    doc = inspect.cleandoc(doc or "")
    head, _, args = doc.partition("Args:")
    params: dict[str, str] = {}
    current = None
    for line in args.splitlines():
        m = re.match(r"\s*(\w+):\s*(.*)", line)
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
    return " ".join(head.split()), params


def spec_from_method(name: str, fn: Callable) -> ToolSpec:
    meta = getattr(fn, _TOOL_ATTR)
    description, param_docs = _doc_sections(fn.__doc__ or "")
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, p in inspect.signature(fn).parameters.items():
        if pname == "self":
            continue
        prop = _json_type(hints[pname])
        prop["description"] = param_docs.get(pname, "")
        prop.update(meta["schema"].get(pname, {}))
        properties[pname] = prop
        if p.default is inspect.Parameter.empty:
            required.append(pname)
    params = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return ToolSpec(name, description, params, writes=meta["writes"], policies=meta["policies"])


def unavailable(call: ToolCall, tools: Iterable[str], available: Iterable[str] | None) -> CallEvent | None:
    """The event of a call to a tool that does not exist (with a "did you mean" naming only a
    tool the agent may call now, never a hidden one) or is not available yet; ``None`` if the
    call may run. Every backend answers these two the same way."""
    # the env's own set is only read here, so it is not copied
    allowed = available if available is None or isinstance(available, (set, frozenset)) else set(available)
    if call.name not in tools:
        close = difflib.get_close_matches(call.name, [t for t in tools if allowed is None or t in allowed], n=1)
        hint = f"did you mean '{close[0]}'?" if close else None
        return CallEvent("unknown_tool", call.name, message=f"unknown tool '{call.name}'", hint=hint)
    if allowed is not None and call.name not in allowed:
        return CallEvent("unavailable_tool", call.name, message=f"tool '{call.name}' is not available now")
    return None


class Backend:
    """A stateful in-memory service. Subclasses set ``domain`` and ``POLICIES`` and add tools.

    Keys of ``state`` that start with ``_`` are session bookkeeping (who is verified, counters
    the policies need): the service uses them but the verifier does not compare them.
    """

    domain: ClassVar[str] = ""
    POLICIES: ClassVar[Mapping[str, str]] = {}
    _specs: ClassVar[dict[str, ToolSpec]]
    _schemas: ClassVar[dict[str, Mapping[str, Any]]]  # tool -> parameters: types the values of XML calls

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._specs = {
            name: spec_from_method(name, fn)
            for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction)
            if hasattr(fn, _TOOL_ATTR)
        }
        cls._schemas = {name: spec.parameters for name, spec in cls._specs.items()}
        for spec in cls._specs.values():
            unknown = set(spec.policies) - set(cls.POLICIES)
            if unknown:
                raise ValueError(f"{cls.__name__}.{spec.name} names unknown policies {sorted(unknown)}")

    def __init__(self, state: Mapping[str, Any]):
        self.state: dict[str, Any] = deep_copy(dict(state))

    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        return dict(cls._specs)

    def parse_action(self, action: Any) -> ParsedAction:
        """The action's calls and text: the JSON, Hermes and OpenAI shapes of
        :func:`seal_envs.core.calls.parse_action`. Part of the backend contract
        (:class:`~seal_envs.core.source.ToolBackend`) because a backend may read more syntax
        (BFCL's Python calls); not a tool, since it carries no ``@tool`` mark."""
        return parse_action(action, self._schemas)

    def comparable_state(self) -> dict[str, Any]:
        """A copy of the state the verifier compares: everything but session bookkeeping."""
        return deep_copy({k: v for k, v in self.state.items() if not k.startswith("_")})

    def record(self, collection: str, key: str, param: str, noun: str, hint: str | None = None) -> dict:
        """``state[collection][key]``, or the error an agent can act on: '<noun> <key> not found'."""
        found = self.state[collection].get(key)
        if found is None:
            raise ToolError(f"{noun} {key} not found", param=param, hint=hint)
        return found

    @property
    def session(self) -> dict[str, Any]:
        return self.state.setdefault("_session", {})

    def execute(self, call: ToolCall, available: Iterable[str] | None = None) -> CallEvent:
        """Validate and run one call; never raises for anything the caller sent."""
        specs = self._specs
        refused = unavailable(call, specs, available)
        if refused is not None:
            return refused
        spec = specs[call.name]
        error = validate_arguments(call.name, spec.parameters, call.arguments)
        if error is not None:
            return CallEvent("schema_violation", call.name, error.param, error.message, hint=error.problem)
        before = Snapshot(self.state)
        try:
            result = getattr(self, call.name)(**schema_typed(spec.parameters, dict(call.arguments)))
        except ToolError as e:
            self.state = before.restore()
            return CallEvent("tool_error", call.name, e.param, str(e), hint=e.hint)
        except PolicyViolation as e:
            self.state = before.restore()
            return CallEvent("policy_violation", call.name, message=str(e), rule=e.rule)
        except Exception as e:  # a fault of the service itself: never the agent's blame
            self.state = before.restore()
            return CallEvent("env_error", call.name, message=f"internal error in {call.name}: {type(e).__name__}")
        return CallEvent("ok", call.name, result=deep_copy(result))
