"""BFCL's Python call syntax, read as data with ``ast``: literals only, nothing is evaluated.

BFCL's prompting format is a list of calls, ``[cd(folder='document'), ls(a=True)]``; a single
call ``cd(folder='document')`` is accepted too, with or without a Markdown code fence around it.
Arguments must be Python literals: strings, numbers, booleans, ``None``, a leading sign, and
lists, tuples and dicts of those. A name, an attribute, an operator or a nested call is a
:class:`~seal_envs.core.calls.FormatError`, so ``__import__('os').system(...)`` is rejected as
text and never runs (bfcl-eval's own executor ``eval``-s the string behind a name blocklist).

Positional arguments are mapped onto parameter names with the tool's signature, as Python
would (the ground truth writes ``sort('final_report.pdf')``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from seal_envs.core.calls import MAX_DEPTH, FormatError, ParsedAction, check_calls, parse_action, plain_action
from seal_envs.core.types import ToolCall

_CALL_START = re.compile(r"\[?\s*[A-Za-z_]\w*\s*\(")  # ``name(`` or ``[name(``: text that starts a call
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)


@dataclass(frozen=True)
class PyCall:
    """One call as written: positional values in order, keyword values by name."""

    name: str
    args: tuple = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)


def literal(node: ast.AST) -> Any:
    """The value of a literal expression; :class:`FormatError` for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(e) for e in node.elts]
    if isinstance(node, ast.Dict) and None not in node.keys:
        keys = [literal(k) for k in node.keys]
        if all(isinstance(k, (str, int, float, bool, type(None))) for k in keys):
            return dict(zip(keys, (literal(v) for v in node.values)))
    if isinstance(node, ast.Name) and node.id in ("true", "false", "null"):
        raise FormatError(f"'{node.id}' is JSON, not Python: write True, False or None in a Python call")
    raise FormatError(f"arguments must be literals (strings, numbers, booleans, None, lists, dicts); "
                      f"got {ast.unparse(node)[:60]!r}")


def _call(node: ast.Call) -> PyCall:
    if not isinstance(node.func, ast.Name):
        raise FormatError(f"call a tool by its bare name, as in cd(folder='x'); got {ast.unparse(node.func)[:60]!r}")
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise FormatError(f"{node.func.id}: '**' is not allowed; write each argument as name=value")
        if kw.arg in kwargs:
            raise FormatError(f"{node.func.id}: argument '{kw.arg}' is given twice")
        kwargs[kw.arg] = literal(kw.value)
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise FormatError(f"{node.func.id}: '*' is not allowed; write each argument")
    return PyCall(node.func.id, tuple(literal(a) for a in node.args), kwargs)


def parse_python_calls(text: str) -> list[PyCall] | None:
    """The calls in ``text``; ``[]`` for an empty list (BFCL's "no call"); ``None`` when the text
    is not call syntax at all (prose). Raises :class:`FormatError` for call syntax that is not
    made of literals."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    if not stripped or not (stripped[0] == "[" or (stripped[0].isidentifier() and "(" in stripped)):
        return None  # prose ("Done."): a call has parentheses, and the parser need not say so
    try:
        body = ast.parse(stripped, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        # a call whose arguments nest past the parser's limits is a call that does not parse,
        # not prose: a format error, as in every other call format
        too_deep = not isinstance(e, (SyntaxError, ValueError)) or "too many nested" in str(e)
        if too_deep and _CALL_START.match(stripped):
            raise FormatError(f"arguments nested deeper than {MAX_DEPTH} levels") from None
        return None
    try:  # literal() and ast.unparse recurse: a chain of a few hundred unary signs parses yet overflows
        if isinstance(body, ast.Call):
            return [_call(body)]
        if isinstance(body, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Call) for e in body.elts):
            return [_call(e) for e in body.elts]
    except RecursionError:
        raise FormatError(f"arguments nested deeper than {MAX_DEPTH} levels") from None
    return None


def to_tool_call(call: PyCall, signatures: Mapping[str, Sequence[str]]) -> ToolCall:
    """Name the positional arguments with the tool's parameter order.

    A tool not in ``signatures`` keeps its positional values under ``_0``, ``_1``... so that the
    backend can report the unknown tool with what was sent."""
    if not call.args:
        return ToolCall(call.name, dict(call.kwargs))
    params = signatures.get(call.name)
    if params is None:
        return ToolCall(call.name, {f"_{i}": v for i, v in enumerate(call.args)} | dict(call.kwargs))
    if len(call.args) > len(params):
        raise FormatError(f"{call.name} takes at most {len(params)} positional argument(s) "
                          f"({', '.join(params) or 'none'}), got {len(call.args)}")
    named = dict(zip(params, call.args))
    twice = sorted(set(named) & set(call.kwargs))
    if twice:
        raise FormatError(f"{call.name}: argument '{twice[0]}' is given both by position and by name")
    return ToolCall(call.name, named | dict(call.kwargs))


def parse_calls(lines: Sequence[str], signatures: Mapping[str, Sequence[str]]) -> tuple[ToolCall, ...]:
    """Ground-truth strings (one call each) as tool calls."""
    calls = []
    for line in lines:
        parsed = parse_python_calls(line)
        if not parsed:
            raise FormatError(f"not a call in BFCL syntax: {line!r}")
        calls.extend(to_tool_call(c, signatures) for c in parsed)
    return tuple(calls)


def parse_bfcl_action(action: Any, signatures: Mapping[str, Sequence[str]],
                      schemas: Mapping[str, Mapping[str, Any]] | None = None) -> ParsedAction:
    """Every format :func:`seal_envs.core.calls.parse_action` accepts, plus BFCL's Python syntax.

    Text that is not a call stays an answer that ends the turn; ``[]`` is "no call" too."""
    action = plain_action(action)
    if isinstance(action, str) and action.strip() == "[]":
        return ParsedAction((), "")
    parsed = parse_action(action, schemas)
    if parsed.calls:
        return parsed
    calls = parse_python_calls(parsed.text)
    if calls is None:
        return parsed
    return ParsedAction(check_calls(tuple(to_tool_call(c, signatures) for c in calls)), "")
