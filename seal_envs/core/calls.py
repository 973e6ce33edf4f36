"""Turn an assistant action into tool calls, a plain answer, or a precise format error.

Model text is only ever parsed as data (JSON, or the restricted Python call syntax via ``ast``
literals); nothing is evaluated. Supported shapes:

- a JSON object ``{"name": ..., "arguments": {...}}`` (``"parameters"`` is accepted too),
- a JSON list of such objects (parallel calls),
- Hermes/Qwen ``<tool_call>{...}</tool_call>`` blocks, several allowed, text around them kept,
- an OpenAI-style assistant message dict with ``tool_calls`` (arguments as a dict or JSON text).

Anything that looks like an attempted call but does not parse is a :class:`FormatError`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from .types import ToolCall

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)


class FormatError(ValueError):
    """The action tried to call a tool but is not a well-formed call."""


@dataclass(frozen=True)
class ParsedAction:
    """``calls`` empty means the action is a message to the user (``text``)."""

    calls: tuple[ToolCall, ...]
    text: str

    @property
    def is_answer(self) -> bool:
        return not self.calls


def _call_from_obj(obj: Any, where: str) -> ToolCall:
    if not isinstance(obj, Mapping):
        raise FormatError(f"{where}: expected an object with 'name' and 'arguments', got {type(obj).__name__}")
    if "function" in obj and isinstance(obj["function"], Mapping):  # OpenAI tool_calls entry
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise FormatError(f"{where}: missing the tool 'name' (a non-empty string)")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as e:
            raise FormatError(f"{where}: 'arguments' of {name!r} is not valid JSON ({e.msg} at char {e.pos})") from None
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise FormatError(f"{where}: 'arguments' of {name!r} must be an object, got {type(args).__name__}")
    extra = set(obj) - {"name", "arguments", "parameters", "id", "type"}
    if extra:
        raise FormatError(f"{where}: unexpected key(s) {sorted(extra)} beside 'name' and 'arguments'")
    return ToolCall(name.strip(), dict(args))


def _parse_json_calls(text: str, where: str) -> tuple[ToolCall, ...]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise FormatError(f"{where}: invalid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    if isinstance(obj, list):
        if not obj:
            raise FormatError(f"{where}: empty list of calls")
        return tuple(_call_from_obj(o, f"{where} item {i}") for i, o in enumerate(obj))
    return (_call_from_obj(obj, where),)


def _parse_message_dict(msg: Mapping[str, Any]) -> ParsedAction:
    content = msg.get("content") or ""
    if not isinstance(content, str):
        raise FormatError("message 'content' must be a string")
    raw = msg.get("tool_calls") or []
    if not isinstance(raw, list):
        raise FormatError("message 'tool_calls' must be a list")
    if not raw:
        return parse_action(content)
    calls = tuple(_call_from_obj(c, f"tool_calls[{i}]") for i, c in enumerate(raw))
    return ParsedAction(calls, content.strip())


def _looks_like_json_call(stripped: str) -> bool:
    return stripped.startswith("{") or (stripped.startswith("[") and stripped[1:].lstrip().startswith(("{", "]")))


def parse_action(action: Any) -> ParsedAction:
    """Parse one assistant action; raise :class:`FormatError` with a message the agent can act on."""
    if isinstance(action, Mapping):
        return _parse_message_dict(action)
    if not isinstance(action, str):
        raise FormatError(f"an action is text or an assistant message dict, got {type(action).__name__}")
    if "<tool_call>" in action:
        calls: list[ToolCall] = []
        for i, m in enumerate(_TOOL_CALL_BLOCK.finditer(action)):
            if not m.group(2):
                raise FormatError(f"<tool_call> block {i} is not closed with </tool_call>")
            calls.extend(_parse_json_calls(m.group(1).strip(), f"<tool_call> block {i}"))
        text = _TOOL_CALL_BLOCK.sub("", action).strip()
        return ParsedAction(tuple(calls), text)
    if "</tool_call>" in action:
        raise FormatError("found </tool_call> without an opening <tool_call>")
    stripped = action.strip()
    if _looks_like_json_call(stripped):
        return ParsedAction(_parse_json_calls(stripped, "JSON call"), "")
    return ParsedAction((), stripped)


def format_calls_hermes(calls: tuple[ToolCall, ...] | list[ToolCall]) -> str:
    """The Hermes/Qwen spelling of calls: what the oracle and the tiny model emit."""
    return "\n".join(
        "<tool_call>" + json.dumps({"name": c.name, "arguments": dict(c.arguments)}, ensure_ascii=False) + "</tool_call>"
        for c in calls
    )
