"""``MCPBackend``: one episode's service is an MCP server; the env sees a ``ToolBackend``.

A call goes through the same two gates as a native tool before it reaches the server (an
unknown or unavailable tool, then the arguments against the tool's ``inputSchema`` with
:func:`seal_envs.core.validation.validate_arguments`), so the labels and the feedback are the
native ones. What the server does with a valid call is its own: ``isError`` or a JSON-RPC error
is a ``tool_error`` (the service refused, as a native ``ToolError``); a server that exits, misses
the deadline, floods or answers garbage is an ``env_error`` whose message says which, never an
exception out of ``step``.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from seal_envs.core.backend import unavailable
from seal_envs.core.calls import ParsedAction, parse_action
from seal_envs.core.datacopy import deep_copy
from seal_envs.core.types import CallEvent, ToolCall, ToolSpec
from seal_envs.core.validation import validate_arguments

from .client import MCPConnection, MCPServerError

STATE_ERROR_KEY = "mcp_server_error"  # a state the server could not give (compared, so it fails)


def tool_spec(tool: Mapping[str, Any]) -> ToolSpec:
    """A listed tool (its wire dict) as a ``ToolSpec``; a tool whose schema is not a JSON Schema
    object is refused here, at start, rather than at the agent's first call."""
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise MCPServerError(f"the server listed a tool without a name: {json.dumps(tool, default=str)[:120]}")
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise MCPServerError(f"tool {name!r}: inputSchema must be a JSON Schema of type object, got {str(schema)[:120]}")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        raise MCPServerError(f"tool {name!r}: inputSchema is not a valid JSON Schema: {e.message}") from None
    annotations = tool.get("annotations") or {}
    writes = not bool(annotations.get("readOnlyHint", False))  # MCP's default: a tool may write
    return ToolSpec(name, str(tool.get("description") or ""), deep_copy(schema), writes=writes)


def result_value(result: Mapping[str, Any]) -> Any:
    """What a tool returned, as the agent and a check read it: the JSON its text spells (SDK
    servers print a return value as JSON), else the text, else the structured content."""
    parts = []
    for item in result.get("content") or []:
        if isinstance(item, Mapping) and item.get("type") == "text":
            parts.append(str(item.get("text", "")))
        elif isinstance(item, Mapping):
            parts.append(f"[{item.get('type', 'content')} {item.get('mimeType', '')}]".replace(" ]", "]"))
    if not parts and result.get("structuredContent") is not None:
        return result["structuredContent"]
    text = "\n".join(parts)
    if len(parts) == 1:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, default=str))


class MCPBackend:
    """The tools of one MCP server for one episode (the source makes a fresh state per episode).

    ``trajectory`` logs every call the agent made, in order (what a task's ``check`` function
    receives, with the user turn of each call added from the episode record)."""

    POLICIES: Mapping[str, str] = {}

    def __init__(self, connection: MCPConnection, specs: Mapping[str, ToolSpec], *, call_timeout: float,
                 state_tool: str | None = None, state_arguments: Mapping[str, Any] | None = None,
                 max_result_chars: int = 32_768):
        self.connection = connection
        self.specs = specs
        self._schemas = {name: spec.parameters for name, spec in specs.items()}
        self.call_timeout = call_timeout
        self.state_tool = state_tool
        self.state_arguments = dict(state_arguments or {})
        self.max_result_chars = max_result_chars
        self.trajectory: list[dict[str, Any]] = []

    @property
    def fault(self) -> str | None:
        """Why the server is no longer usable this episode, or None."""
        return self.connection.fault

    def tool_specs(self) -> dict[str, ToolSpec]:
        return dict(self.specs)

    def parse_action(self, action: Any) -> ParsedAction:
        return parse_action(action, self._schemas)

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallEvent:
        """Send one call to the server (no gate: the env's calls go through :meth:`execute`)."""
        try:
            result = self.connection.request("call_tool", name, dict(arguments), timeout=self.call_timeout)
        except MCPServerError as e:
            return CallEvent("env_error", name, message=f"MCP server fault: {e}")
        except Exception as e:  # noqa: BLE001 - a JSON-RPC error answer: the server refused the call
            error = getattr(e, "error", None)
            text = getattr(error, "message", None) or str(e)
            return CallEvent("tool_error", name, message=str(text)[:2000])
        value = result_value(result)
        if _size(value) > self.max_result_chars:
            return CallEvent("env_error", name, message=f"MCP server fault: the result of {name} is {_size(value)} "
                                                        f"characters, over the limit of {self.max_result_chars}")
        if result.get("isError"):
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            return CallEvent("tool_error", name, message=text[:2000] or f"{name} failed")
        return CallEvent("ok", name, result=value)

    def execute(self, call: ToolCall, available: Iterable[str] | None = None) -> CallEvent:
        """Validate and run one call; never raises for anything the agent sent or the server did."""
        event = unavailable(call, self.specs, available)
        if event is None:
            error = validate_arguments(call.name, self.specs[call.name].parameters, call.arguments)
            if error is not None:
                event = CallEvent("schema_violation", call.name, error.param, error.message, hint=error.problem)
        if event is None:
            event = self.call(call.name, call.arguments)
        self.trajectory.append({"name": call.name, "arguments": deep_copy(dict(call.arguments)), "kind": event.kind,
                                "result": deep_copy(event.result), "message": event.message})
        return event

    def read_state(self) -> Any:
        """The state tool's result now, or ``{STATE_ERROR_KEY: reason}`` when it cannot be read."""
        if self.state_tool is None:
            return {}
        event = self.call(self.state_tool, self.state_arguments)
        if not event.ok:
            return {STATE_ERROR_KEY: f"{self.state_tool}: {event.message}"}
        return event.result

    def comparable_state(self) -> dict[str, Any]:
        """The state the verifier compares (the state tool's result; {} without one)."""
        state = self.read_state()
        return state if isinstance(state, dict) else {"state": state}
