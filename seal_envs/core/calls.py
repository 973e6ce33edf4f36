"""Turn an assistant action into tool calls, a plain answer, or a precise format error.

Model text is only ever parsed as data (JSON, or the restricted Python call syntax via ``ast``
literals); nothing is evaluated. The action shapes ``env.step`` accepts (:data:`ACTION_SHAPES`):

- text (``str``): Hermes/Qwen ``<tool_call>{...}</tool_call>`` blocks (several allowed, text around
  them kept), or a JSON object ``{"name": ..., "arguments": {...}}`` (``"parameters"`` is accepted
  too), or a JSON list of such objects (parallel calls); any other text is an answer to the user;
- a call dict ``{"name": ..., "arguments": {...}}`` (arguments as a dict or JSON text), or an
  OpenAI ``tool_calls`` entry ``{"id": ..., "type": "function", "function": {...}}``: one call;
- a list of call dicts: parallel calls;
- an OpenAI-style assistant message dict (``role``, ``content``, ``tool_calls``; ``role``, if
  given, is ``"assistant"``): its calls, or its content as text.

A dict is told apart by its keys: ``role``, ``content`` or ``tool_calls`` make it a message,
otherwise ``name`` or ``function`` make it a call. A dict with neither, a message with a key
no assistant message has, and any other type (tuple, number, ``None``, bytes...) is a
:class:`FormatError` that names these shapes: a bare call dict used to be read as an empty
message, which ended the turn silently; nothing is read as an empty reply by accident.
Anything that looks like an attempted call but does not parse is a :class:`FormatError` too.

Limits, so that one action costs bounded time and memory whatever the model writes (each is a
:class:`FormatError` naming the limit): at most ``MAX_ACTION_CHARS`` characters (the declared
action space; a dict action is measured by its JSON spelling), at most ``MAX_CALLS`` calls,
values nested at most ``MAX_DEPTH`` levels, integers of at most ``MAX_INT_BITS`` bits (Python
refuses to print an int past 4,300 digits, and every call is compared through its JSON text),
and only JSON data: objects with string keys, lists, strings, numbers, booleans and null (a set,
bytes or a circular structure in a dict action is refused, not repaired). Non-finite numbers
parse, and are schema violations (see :mod:`seal_envs.core.validation`).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .call_formats import CALL_FORMATS, CallSyntaxError, find_native_calls, parse_xml_function
from .types import ToolCall

MAX_ACTION_CHARS = 8192
MAX_CALLS = 64
MAX_DEPTH = 32
MAX_INT_BITS = 256


class FormatError(ValueError):
    """The action tried to call a tool but is not a well-formed call."""


# A message dict wraps arguments in tool_calls[i].function.arguments: four levels more.
_ENVELOPE = 4

#: What ``env.step`` accepts, as every refusal of an action's type or keys spells it.
ACTION_SHAPES = ("an action is text, a call dict {\"name\": ..., \"arguments\": {...}}, a list of call dicts, "
                 "or an assistant message dict {\"role\": \"assistant\", \"content\": ..., \"tool_calls\": [...]}")
#: The keys of a call dict (``parameters`` is Llama's spelling of ``arguments``) and of an OpenAI
#: ``tool_calls`` entry: any other key is refused, in every call shape (text, dict, message).
CALL_KEYS = frozenset({"name", "arguments", "parameters", "id", "type"})
ENTRY_KEYS = frozenset({"id", "type", "function"})
# The keys an assistant message from a chat-completions server may carry (null or not).
MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "refusal", "reasoning_content", "reasoning", "name",
                          "annotations", "audio", "function_call"})


def json_data(value: Any, where: str = "action", budget: int = MAX_ACTION_CHARS, max_depth: int = MAX_DEPTH) -> Any:
    """A plain-JSON copy of ``value`` (dicts, lists, str, int, float, bool, None), or a
    :class:`FormatError` saying what is not JSON data.

    Iterative, and bounded by ``budget`` (about the length of the JSON spelling) and
    :data:`MAX_DEPTH`, so a huge, deep or circular structure is refused after a bounded walk
    instead of exhausting the stack or the clock downstream. Tuples and other sequences are
    not accepted from dict actions either: the value must be what a JSON parser could return.

    Every value is first made its plain built-in type by the built-in's own method (by
    ``type()``, which an object cannot fake), and only then measured: calling code may pass a
    subclass whose ``bit_length``, ``__len__`` or ``__str__`` lies or raises, and the limits
    must hold for the value the backend will see (issue 30). A string holding a lone surrogate
    is refused too: it has no UTF-8 spelling, so no backend, transcript or log can write it.
    """
    root: list[Any] = [None]
    # Each entry's path is (parent's path, slot), None at the root: spelt only for an error,
    # since formatting a path string for every value was most of a parse (issue 16).
    stack: list[tuple[Any, list | dict, Any, int, tuple | None]] = [(value, root, 0, 0, None)]
    used = 0
    while stack:
        item, parent, slot, depth, path = stack.pop()
        if depth > max_depth:
            raise FormatError(f"{_spell(where, path)}: nested deeper than {MAX_DEPTH} levels")
        used += 1
        if used > budget:
            raise FormatError(f"{where}: larger than {budget} characters as JSON")
        kind = type(item)
        if kind is str or issubclass(kind, str):  # the commonest value, tested first
            out = item if kind is str else str.__str__(item)
            used += len(out)
            if not out.isascii():
                _check_utf8(out, where, path)
        elif item is None or kind is bool:
            out: Any = item
        elif issubclass(kind, float):
            out = item if kind is float else float.__float__(item)
        elif issubclass(kind, int):
            out = item if kind is int else int.__int__(item)
            if out.bit_length() > MAX_INT_BITS:
                raise FormatError(f"{_spell(where, path)}: integer larger than {MAX_INT_BITS} bits")
            used += len(str(out))
        elif issubclass(kind, list):
            items = item if kind is list else list.copy(item)
            out = [None] * len(items)
            for i in range(len(items) - 1, -1, -1):
                stack.append((items[i], out, i, depth + 1, (path, i)))
        elif kind is dict or issubclass(kind, Mapping):  # the exact type skips the ABC check
            pairs = list(item.items()) if kind is dict else _pairs(item, kind, budget - used, where, path)
            out, keys = {}, []
            for k, _ in pairs:
                if type(k) is not str:
                    if not issubclass(type(k), str):
                        raise FormatError(f"{_spell(where, path)}: object keys must be strings, got {type(k).__name__}")
                    k = str.__str__(k)
                used += len(k)
                out[k] = None
                keys.append(k)
            for i in range(len(pairs) - 1, -1, -1):
                stack.append((pairs[i][1], out, keys[i], depth + 1, (path, keys[i])))
        else:
            raise FormatError(f"{_spell(where, path)}: {kind.__name__} is not JSON data "
                              "(use objects, lists, strings, numbers, booleans and null)")
        if used > budget:
            raise FormatError(f"{where}: larger than {budget} characters as JSON")
        parent[slot] = out
    return root[0]


def _pairs(item: Any, kind: type, budget: int, where: str, path: tuple | None) -> list[tuple[Any, Any]]:
    """The key-value pairs of a mapping: a dict's own storage (a subclass cannot change what is
    read), another ``Mapping`` read through its methods, at most ``budget`` pairs, and any error
    it raises a :class:`FormatError`."""
    if issubclass(kind, dict):
        return list(dict.items(item))
    try:
        pairs = list(itertools.islice(item.items(), max(budget, 0) + 1))
    except Exception as e:  # noqa: BLE001 - whatever calling code's mapping raises
        raise FormatError(f"{_spell(where, path)}: a {kind.__name__} that cannot be read "
                          f"({type(e).__name__})") from None
    if len(pairs) > budget:
        raise FormatError(f"{where}: larger than {budget} characters as JSON")
    return pairs


def _check_utf8(text: str, where: str, path: tuple | None) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise FormatError(f"{_spell(where, path)}: a lone surrogate {text[e.start]!r} is not text "
                          "(write the character itself, or a valid surrogate pair)") from None


def plain_action(action: Any) -> Any:
    """``action`` with a ``str`` subclass read as the plain string it holds (its ``__len__`` or
    ``__str__`` may lie or raise); dict and list actions are made plain by :func:`json_data`."""
    kind = type(action)
    if kind is not str and issubclass(kind, str):
        return str.__str__(action)
    return action


def _spell(where: str, path: tuple | None) -> str:
    """A value's place as errors name it: ``where[0].key`` (a list index in brackets, a key after
    a dot, the text cut to 200 characters at each key, as it always was)."""
    slots = []
    while path is not None:
        path, slot = path
        slots.append(slot)
    text = where
    for slot in reversed(slots):
        text = f"{text}[{slot}]" if isinstance(slot, int) else f"{text}.{slot}"[:200]
    return text


#: A run of digits long enough to spell an integer past MAX_INT_BITS (2**256 has 78 digits).
_LONG_DIGITS = re.compile(r"\d{78}")


def within_limits(text: str) -> bool:
    """Whether every value ``json.loads(text)`` can give is inside every limit, by looking at the
    text: short enough that no measure reaches the budget, ASCII without ``\\u`` escapes (so no
    lone surrogate), fewer brackets than :data:`MAX_DEPTH` (so no deeper nesting) and no run of
    digits that could spell a too-large integer. Such JSON needs no walk to enforce the limits:
    the two walks a call used to take (the parse's and :func:`check_calls`') were half of a
    parse (issue 27). False is only "not known": the walk then decides."""
    return (len(text) <= MAX_ACTION_CHARS // 2 and text.isascii() and "\\u" not in text
            and text.count("{") + text.count("[") <= MAX_DEPTH and _LONG_DIGITS.search(text) is None)


def loads(text: str, where: str) -> Any:
    """``json.loads`` whose every failure is a :class:`FormatError`: invalid JSON, a number past
    Python's int-string limit (``ValueError``), nesting past the stack (``RecursionError``)."""
    return _loads(text, where)[0]


def _loads(text: str, where: str) -> tuple[Any, bool]:
    """:func:`loads`, and whether :func:`within_limits` passed the text (the caller's calls then
    need no walk either)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise FormatError(f"{where}: invalid JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise FormatError(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise FormatError(f"{where}: a number is too long ({e})") from None
    if within_limits(text):
        return obj, True  # json.loads made it plain data, and it cannot break a limit
    return json_data(obj, where, budget=max(MAX_ACTION_CHARS, 2 * len(text)), max_depth=MAX_DEPTH + _ENVELOPE), False


@dataclass(frozen=True)
class ParsedAction:
    """``calls`` empty means the action is a message to the user (``text``)."""

    calls: tuple[ToolCall, ...]
    text: str

    @property
    def is_answer(self) -> bool:
        return not self.calls


def _call_from_obj(obj: Any, where: str) -> ToolCall:
    if type(obj) is not dict and not isinstance(obj, Mapping):
        raise FormatError(f"{where}: expected an object with 'name' and 'arguments', got {type(obj).__name__}")
    if "function" in obj and isinstance(obj["function"], Mapping):  # OpenAI tool_calls entry
        _no_unknown_keys(obj, ENTRY_KEYS, where, "an OpenAI tool_calls entry (it has 'id', 'type' and 'function')")
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise FormatError(f"{where}: missing the tool 'name' (a non-empty string)")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = loads(args, where) if args.strip() else {}
        except FormatError as e:
            raise FormatError(f"{where}: 'arguments' of {name!r} is not valid JSON: "
                              f"{str(e).removeprefix(where + ': ')}") from None
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise FormatError(f"{where}: 'arguments' of {name!r} must be an object, got {type(args).__name__}")
    _no_unknown_keys(obj, CALL_KEYS, where, "a call (it has 'name' and 'arguments')")
    return ToolCall(name.strip(), dict(args))


def _no_unknown_keys(obj: Mapping[str, Any], known: frozenset, where: str, shape: str) -> None:
    """The one rule for every call shape: a key the shape does not have is a :class:`FormatError`
    naming it (an OpenAI entry's extra keys used to be dropped while a call dict's were refused)."""
    extra = set(obj) - known
    if extra:
        raise FormatError(f"{where}: unexpected key(s) {sorted(extra)[:8]} in {shape}")


def _parse_json_calls(text: str, where: str) -> tuple[tuple[ToolCall, ...], bool]:
    """The calls of a JSON text, and whether the text was within every limit (see :func:`_loads`)."""
    obj, within = _loads(text, where)
    if isinstance(obj, list):
        if not obj:
            raise FormatError(f"{where}: empty list of calls")
        return tuple(_call_from_obj(o, f"{where} item {i}") for i, o in enumerate(obj)), within
    return (_call_from_obj(obj, where),), within


def _dict_kind(obj: Mapping[str, Any]) -> str:
    """``"message"`` or ``"call"`` by the keys, or a :class:`FormatError` naming both shapes."""
    if {"role", "content", "tool_calls"} & set(obj):
        return "message"
    if {"name", "function"} & set(obj):
        return "call"
    raise FormatError(f"a dict with keys {sorted(obj)[:8]} is neither a call nor a message: {ACTION_SHAPES}")


def _parse_message_dict(msg: Mapping[str, Any]) -> ParsedAction:
    extra = set(msg) - MESSAGE_KEYS
    if extra:
        raise FormatError(f"unexpected key(s) {sorted(extra)[:8]} in an assistant message "
                          "(it has 'role', 'content' and 'tool_calls')")
    if msg.get("role", "assistant") != "assistant":
        raise FormatError(f"a message action has role 'assistant', got {msg['role']!r}")
    if msg.get("function_call"):
        raise FormatError("the legacy 'function_call' field is not read: send the call in 'tool_calls'")
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


def check_calls(calls: tuple[ToolCall, ...], within: bool = False) -> tuple[ToolCall, ...]:
    """Enforce the limits on parsed calls, whatever syntax produced them; ``within``: the calls
    were read by ``json.loads`` from text that :func:`within_limits` passed, so only their
    number is left to check."""
    if len(calls) > MAX_CALLS:
        raise FormatError(f"{len(calls)} calls in one action; the limit is {MAX_CALLS}")
    if within:
        return tuple(calls)
    return tuple(ToolCall(c.name, json_data(dict(c.arguments), f"arguments of {c.name!r}")) for c in calls)


def action_text(action: Any) -> str:
    """The action as the transcript records it: the text itself, or the JSON of a dict or list action.

    Raises :class:`FormatError` for anything that is neither, or that breaks a limit."""
    action = plain_action(action)
    if type(action) is str:
        if len(action) > MAX_ACTION_CHARS:
            raise FormatError(f"the action has {len(action)} characters; the limit is {MAX_ACTION_CHARS}")
        return action
    if isinstance(action, (Mapping, list)):
        return json.dumps(json_data(action, "action", max_depth=MAX_DEPTH + _ENVELOPE), ensure_ascii=False)
    raise FormatError(f"{ACTION_SHAPES}; got {type(action).__name__}")


def parse_action(action: Any, schemas: Mapping[str, Mapping[str, Any]] | None = None) -> ParsedAction:
    """Parse one assistant action (any of :data:`ACTION_SHAPES`, text in any model family's
    call format of :mod:`seal_envs.core.call_formats`); raise :class:`FormatError` with a message
    the agent can act on. ``schemas`` (tool name -> JSON Schema of its parameters) types the
    parameter values of XML calls, which a model writes as text."""
    action = plain_action(action)
    if isinstance(action, list):  # parallel call dicts, as most tool-calling code builds them
        data = json_data(action, "action", max_depth=MAX_DEPTH + _ENVELOPE)
        if not data:
            raise FormatError(f"empty list of calls; {ACTION_SHAPES}")
        return ParsedAction(check_calls(tuple(_call_from_obj(o, f"action item {i}") for i, o in enumerate(data))), "")
    if isinstance(action, Mapping):
        data = json_data(action, "message", max_depth=MAX_DEPTH + _ENVELOPE)
        if _dict_kind(data) == "call":
            return ParsedAction(check_calls((_call_from_obj(data, "call"),)), "")
        parsed = _parse_message_dict(data)
        return ParsedAction(check_calls(parsed.calls), parsed.text)
    return _parse_text(action_text(action), schemas)


def _raw_calls(raw: list[Any], where: str) -> tuple[ToolCall, ...]:
    return tuple(_call_from_obj(o, f"{where} call {i}" if len(raw) > 1 else where) for i, o in enumerate(raw))


_OPEN, _CLOSE = "<tool_call>", "</tool_call>"


def _tool_call_blocks(action: str) -> tuple[list[str], bool, str]:
    """The bodies of the ``<tool_call>`` blocks in order, whether a last block is left unclosed,
    and the text outside the blocks. A ``str.find`` walk: the lazy regex it replaces tried every
    character and was a third of parsing a call (issue 16)."""
    bodies, outside, pos = [], [], 0
    while True:
        start = action.find(_OPEN, pos)
        if start < 0:
            outside.append(action[pos:])
            return bodies, False, "".join(outside)
        outside.append(action[pos:start])
        end = action.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            return bodies, True, "".join(outside)
        bodies.append(action[start + len(_OPEN):end])
        pos = end + len(_CLOSE)


def _parse_text(action: str, schemas: Mapping[str, Mapping[str, Any]] | None = None) -> ParsedAction:
    if _OPEN in action:
        calls: list[ToolCall] = []
        within = True  # every block is JSON that within_limits passed
        bodies, unclosed, outside = _tool_call_blocks(action)
        for i, raw_body in enumerate(bodies):
            body, where = raw_body.strip(), f"<tool_call> block {i}"
            if body.startswith("<function="):  # Qwen3-Coder's XML inside the block
                within = False
                try:
                    calls.extend(_raw_calls(parse_xml_function(body, schemas), where))
                except CallSyntaxError as e:
                    raise FormatError(f"{where}: {e}") from None
            else:
                block, block_within = _parse_json_calls(body, where)
                calls.extend(block)
                within = within and block_within
            if len(calls) > MAX_CALLS:
                break
        else:
            if unclosed:
                raise FormatError(f"<tool_call> block {len(bodies)} is not closed with </tool_call>")
        return ParsedAction(check_calls(tuple(calls), within), outside.strip())
    if "</tool_call>" in action:
        raise FormatError("found </tool_call> without an opening <tool_call>")
    try:
        native = find_native_calls(action, schemas)
    except CallSyntaxError as e:
        raise FormatError(f"a tool call that does not parse: {e}") from None
    if native is not None:
        raw, before = native
        return ParsedAction(check_calls(_raw_calls(raw[:MAX_CALLS + 1], "native call")), before)
    stripped = action.strip()
    if _looks_like_json_call(stripped):
        return ParsedAction(check_calls(*_parse_json_calls(stripped, "JSON call")), "")
    return ParsedAction((), stripped)


def format_calls_hermes(calls: tuple[ToolCall, ...] | list[ToolCall]) -> str:
    """The Hermes/Qwen spelling of calls: what the oracle and the tiny model emit."""
    return CALL_FORMATS["hermes"].spell(calls)
