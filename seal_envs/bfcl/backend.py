"""bfcl-eval's own API classes behind the :class:`~seal_envs.core.backend.Backend` interface.

Each episode gets fresh instances of the entry's involved classes (``GorillaFileSystem``,
``TradingBot``...), loaded from the entry's ``initial_config`` exactly as bfcl-eval's executor
loads them (``_load_scenario`` on a deep copy, ``long_context`` for that category). Nothing is
cached between episodes: bfcl-eval's executor keeps instances in module globals, never evicted.

A call is dispatched by name to a whitelisted method: the tools in the func docs of the involved
classes, and nothing else. Arguments are validated against the doc's JSON Schema first. Every
call that reaches the backend is logged as the text bfcl-eval's executor would record for it
(``json.dumps`` of a dict, the string itself, ``str`` otherwise, ``"Error during execution: ..."``
for an exception): the response check compares these texts as BFCL's ``response_checker`` does.
As in bfcl-eval, a method that raises keeps whatever it changed before raising.
"""

from __future__ import annotations

import copy
import difflib
import inspect
import json
from functools import lru_cache
from typing import Any, Iterable, Mapping

from seal_envs.core.backend import Backend
from seal_envs.core.types import CallEvent, ToolCall, ToolSpec
from seal_envs.core.validation import validate_arguments

from . import loader
from .parse import parse_bfcl_action

_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}
RESPONSES_KEY = "_responses"


def json_schema(doc: Mapping[str, Any]) -> dict[str, Any]:
    """BFCL's parameter doc (types ``dict``, ``float``, ``tuple``, ``any``) as JSON Schema."""
    out: dict[str, Any] = {}
    kind = _TYPES.get(doc.get("type"), doc.get("type"))
    if kind:
        out["type"] = kind
    for key in ("description", "enum", "default"):
        if key in doc:
            out[key] = doc[key]
    if "properties" in doc:
        out["properties"] = {k: json_schema(v) for k, v in doc["properties"].items()}
    if "items" in doc:
        out["items"] = json_schema(doc["items"])
    if "required" in doc:
        out["required"] = list(doc["required"])
    return out


@lru_cache(maxsize=None)
def class_specs(class_name: str) -> dict[str, ToolSpec]:
    """The tools of one BFCL class, from its func doc (the canonical surface shows these)."""
    specs = {}
    for doc in loader.func_docs(class_name):
        params = {"type": "object", "properties": {}, "required": []} | json_schema(doc.get("parameters", {}))
        params["type"] = "object"
        params["additionalProperties"] = False
        specs[doc["name"]] = ToolSpec(doc["name"], doc.get("description", ""), params)
    return specs


@lru_cache(maxsize=None)
def class_signatures(class_name: str) -> dict[str, tuple[str, ...]]:
    """Parameter names in order, per tool: how positional arguments are named."""
    cls = loader.backend_class(class_name)
    return {name: tuple(p for p in inspect.signature(getattr(cls, name)).parameters if p != "self")
            for name in class_specs(class_name)}


def specs_for(classes: Iterable[str]) -> dict[str, ToolSpec]:
    """The tools of an entry: those of its involved classes, in their order."""
    out: dict[str, ToolSpec] = {}
    for c in classes:
        out.update(class_specs(c))
    return out


def signatures_for(classes: Iterable[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for c in classes:
        out.update(class_signatures(c))
    return out


def result_text(result: Any) -> str:
    """What bfcl-eval's ``execute_multi_turn_func_call`` records for a return value."""
    if type(result) == str:  # noqa: E721 - the same test bfcl-eval makes
        return result
    if type(result) == dict:  # noqa: E721
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


# The attributes that the equality of bfcl-eval's file-system objects compares.
_OBJECT_FIELDS = {"Directory": ("name", "contents"), "File": ("name", "content")}


def jsonable(value: Any) -> Any:
    """A JSON-compatible copy that compares (``==``) as bfcl-eval's state checker compares."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True, default=str))
    fields = _OBJECT_FIELDS.get(type(value).__name__)
    if fields is not None:
        return {"type": type(value).__name__, **{f: jsonable(getattr(value, f)) for f in fields}}
    return str(value)


class BFCLBackend(Backend):
    """The state of one BFCL entry: fresh bfcl-eval instances of its involved classes.

    ``state`` holds ``initial_config``, ``involved_classes`` and ``long_context`` (read only).
    """

    domain = "bfcl"
    POLICIES: Mapping[str, str] = {}

    def __init__(self, state: Mapping[str, Any]):  # noqa: D107 - no deep copy of the whole config
        self.state = dict(state)
        config = state.get("initial_config", {})
        self.instances: dict[str, Any] = {}
        for name in state["involved_classes"]:
            instance = loader.backend_class(name)()
            if not loader.stateless(name):
                instance._load_scenario(copy.deepcopy(config.get(name, {})),
                                        long_context=bool(state.get("long_context", False)))
            self.instances[name] = instance
        self.methods = {tool: getattr(self.instances[name], tool)
                        for name in self.instances for tool in class_specs(name)}
        self.signatures = signatures_for(self.instances)
        self.specs = specs_for(self.instances)
        self.responses: list[str] = []

    def tool_specs(self) -> dict[str, ToolSpec]:  # an instance method here: the tools depend on the entry
        return dict(self.specs)

    def parse_action(self, action: Any):
        """JSON, Hermes and OpenAI calls, and BFCL's Python syntax (read with ``ast``)."""
        return parse_bfcl_action(action, self.signatures)

    def comparable_state(self) -> dict[str, Any]:
        """Per class, its public attributes (what BFCL's ``state_checker`` compares); under
        ``_responses`` the text of every call so far (for the response check, never compared)."""
        state: dict[str, Any] = {name: {k: jsonable(v) for k, v in vars(inst).items() if not k.startswith("_")}
                                 for name, inst in self.instances.items()}
        state[RESPONSES_KEY] = list(self.responses)
        return state

    def _reject(self, event: CallEvent) -> CallEvent:
        self.responses.append(f"Error during execution: {event.message}")
        return event

    def execute(self, call: ToolCall, available: Iterable[str] | None = None) -> CallEvent:
        """Validate and run one call; never raises for anything the caller sent."""
        method = self.methods.get(call.name)
        if method is None:
            close = difflib.get_close_matches(call.name, list(self.methods), n=1)
            return self._reject(CallEvent("unknown_tool", call.name, message=f"unknown tool '{call.name}'",
                                          hint=f"did you mean '{close[0]}'?" if close else None))
        if available is not None and call.name not in set(available):
            return self._reject(CallEvent("unavailable_tool", call.name,
                                          message=f"tool '{call.name}' is not available now"))
        error = validate_arguments(call.name, self.specs[call.name].parameters, call.arguments)
        if error is not None:
            return self._reject(CallEvent("schema_violation", call.name, error.param, error.message,
                                          hint=error.problem))
        try:  # as in bfcl-eval, turning the result into text is part of the call (a huge int fails there)
            result = method(**copy.deepcopy(dict(call.arguments)))
            text = result_text(result)
        except Exception as e:  # noqa: BLE001 - bfcl-eval records every exception as the call's result
            self.responses.append(f"Error during execution: {e}")
            return CallEvent("tool_error", call.name, message=f"{type(e).__name__}: {e}")
        self.responses.append(text)
        if isinstance(result, dict) and set(result) == {"error"}:
            return CallEvent("tool_error", call.name, message=str(result["error"]))
        return CallEvent("ok", call.name, result=jsonable(result))
