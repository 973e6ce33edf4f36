"""bfcl-eval's own API classes behind the :class:`~seal_envs.core.source.ToolBackend` contract.

Each episode gets fresh instances of the entry's involved classes (``GorillaFileSystem``,
``TradingBot``...), loaded from the entry's ``initial_config`` exactly as bfcl-eval's executor
loads them (``_load_scenario`` on a deep copy, ``long_context`` for that category). No instance
outlives its episode (bfcl-eval's executor keeps instances in module globals, never evicted);
what is kept is the pickled result of a load, per config, so the next episode of an entry
unpickles its own instances instead of loading again.

A call is dispatched by name to a whitelisted method: the tools in the func docs of the involved
classes, and nothing else. Arguments are validated against the doc's JSON Schema first. Every
call that reaches the backend is logged as the text bfcl-eval's executor would record for it
(``json.dumps`` of a dict, the string itself, ``str`` otherwise, ``"Error during execution: ..."``
for an exception): the response check compares these texts as BFCL's ``response_checker`` does.
As in bfcl-eval, a method that raises keeps whatever it changed before raising.

Isolation: bfcl-eval's ``_load_scenario`` links module-level data into instances (``TravelAPI``
merges ``CREDIT_CARD_EXTENSION``'s card dicts by reference, ``TradingBot`` its extension lists),
so a call in one episode would change the next one's starting state. Each instance's attributes
are deep-copied after loading: an episode owns everything it can mutate.

Bounds (``ARGUMENT_LIMITS``, a ``schema_violation`` that names the parameter when broken): a few
of bfcl-eval's tools do work that grows with an argument, ``MathAPI.power`` with the exponent
(``7 ** 10**7`` takes seconds), ``logarithm`` and ``square_root`` with the precision (and they set
it process-wide, in ``mpmath.mp`` and the thread's ``decimal`` context). Those arguments are
bounded far above anything the ground truth uses, and every call runs inside a local ``decimal``
context with ``mpmath``'s precision restored afterwards, so no call leaves process-wide state.

State bounds (``STATE_LIMITS``, a ``tool_error`` past one, the class's state put back as it was
before the call): bfcl-eval's file system shares data between directories (``mv`` gives the
moved directory the old one's contents dict, ``cp`` copies a directory's contents shallowly),
so a few dozen ``cp``/``mv`` calls double the tree that every walk sees (the checker's, ``find``,
``du``) every few calls, and ``cp(source='d', destination='d')`` makes a directory that contains
itself. After every call to a class whose state holds such objects (the file system: the
other classes' calls only ever add what they carry, so their state grows at most by one action
per call) the class's state is walked as the checker walks it (a shared
subtree counts each time it is reached; from every attribute, and from each ancestor of the
current directory that ``cd ..`` reaches but nothing above holds any more),
and refused past :data:`MAX_STATE_VALUES` values, :data:`MAX_STATE_CHARS` characters or
:data:`MAX_STATE_DEPTH` levels (a directory inside itself is infinitely deep). The largest
initial state of the 800 entries, counted so, has 563 values, 18,559 characters and depth 9;
a walk to the bound takes milliseconds.
"""

from __future__ import annotations

import copyreg
import decimal
import inspect
import io
import itertools
import json
import marshal
import pickle
import random
import sys
from array import array
from collections import ChainMap
from functools import cached_property, lru_cache
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from seal_envs.core.backend import unavailable
from seal_envs.core.calls import ParsedAction
from seal_envs.core.datacopy import ObjectSnapshot, deep_copy, deep_copy_objects
from seal_envs.core.types import JSON_SCALARS, CallEvent, ToolCall, ToolSpec
from seal_envs.core.validation import schema_typed, validate_arguments

from . import loader
from .parse import parse_bfcl_action

_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}
RESPONSES_KEY = "_responses"

MAX_EXPONENT = 1000
MAX_PRECISION = 1000
# Per tool, JSON Schema bounds checked before the call; not shown to the agent (the canonical
# surface is bfcl-eval's own docs), reported when broken.
ARGUMENT_LIMITS: dict[str, dict[str, dict[str, Any]]] = {
    "power": {"exponent": {"minimum": -MAX_EXPONENT, "maximum": MAX_EXPONENT}},
    "logarithm": {"precision": {"maximum": MAX_PRECISION}},
    "square_root": {"precision": {"maximum": MAX_PRECISION}},
    "round_number": {"decimal_places": {"minimum": -MAX_PRECISION, "maximum": MAX_PRECISION}},
}


MAX_STATE_VALUES = 10_000
MAX_STATE_CHARS = 1 << 20
MAX_STATE_DEPTH = 64
#: What one class's state may hold after a call, as :func:`state_problem` counts it.
STATE_LIMITS = {"values": MAX_STATE_VALUES, "characters": MAX_STATE_CHARS, "depth": MAX_STATE_DEPTH}


@lru_cache(maxsize=None)
def _limits_schema(tool: str) -> dict[str, Any] | None:
    """One schema object per tool (read only), so the validator compiles it once."""
    limits = ARGUMENT_LIMITS.get(tool)
    if limits is None:
        return None
    return {"type": "object", "properties": {p: dict(bounds) for p, bounds in limits.items()}}


class _NoGlobalPrecision:
    """Run a call in a private ``decimal`` context and put ``mpmath``'s precision back after it."""

    def __enter__(self):
        self._decimal = decimal.localcontext()
        self._decimal.__enter__()
        mp = getattr(sys.modules.get("mpmath"), "mp", None)
        self._mp, self._prec = mp, (mp.prec if mp is not None else None)
        return self

    def __exit__(self, *exc):
        mp = self._mp or getattr(sys.modules.get("mpmath"), "mp", None)
        prec = self._prec if self._prec is not None else 53
        if mp is not None and mp.prec != prec:  # setting it recomputes mpmath's derived settings
            mp.prec = prec
        self._decimal.__exit__(*exc)
        return False


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


@lru_cache(maxsize=None)
def _entry_tools(classes: tuple[str, ...]) -> tuple[Mapping[str, str], Mapping[str, tuple[str, ...]], Mapping[str, ToolSpec]]:
    """Per tool of an entry's classes: its class, its parameter names in order, its spec. The
    same for every entry with these classes, so made once and shared read-only (a backend is
    made at every reset and for every reference replay)."""
    owners = {tool: name for name in classes for tool in class_specs(name)}
    return MappingProxyType(owners), MappingProxyType(signatures_for(classes)), MappingProxyType(specs_for(classes))


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


def _spelled_alike(result: Any, value: Any, text: str) -> str | None:
    """``text`` (bfcl-eval's ``json.dumps`` of a dict result) when it is exactly what the
    observation spells, ``text_json(value)``, else ``None``: so a result is spelled once.

    Equal values of the same types spell alike, and :func:`jsonable` keeps scalars as they are
    and copies plain containers only, so ``value == result`` means no key, tuple, set or object
    was changed; no ``\\u`` escape means ``ensure_ascii`` changed nothing either."""
    if type(result) is dict and "\\u" not in text and value == result:
        return text
    return None


# The attributes that the equality of bfcl-eval's file-system objects compares.
_OBJECT_FIELDS = {"Directory": ("name", "contents"), "File": ("name", "content")}


def jsonable(value: Any) -> Any:
    """A JSON-compatible copy that compares (``==``) as bfcl-eval's state checker compares.

    Exact built-in types are tested first by identity of type (the states are mostly plain
    dicts, lists and scalars, and this runs over a whole state at every turn's end); subclasses
    and everything else take the general branches below, as they always did."""
    kind = type(value)
    if kind in JSON_SCALARS:
        return value
    if kind is dict:  # scalar values are kept in place, without a call each
        return {k if isinstance(k, str) else str(k): v if type(v) in JSON_SCALARS else jsonable(v)
                for k, v in value.items()}
    if kind is list:
        return [v if type(v) in JSON_SCALARS else jsonable(v) for v in value]
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


# An object's link to its container (``cd ..``), and the field that holds its children: a walk
# goes up a ``parent`` chain to find what ``cd ..`` reaches, and only ever walks down ``contents``.
_UP_FIELDS = {"Directory": ("parent", "contents")}
# Per class, bfcl-eval's methods that leave its state no larger by any bound: the file system's
# reads, ``cd`` (it moves a pointer to a directory the walk already counts), and ``rm`` and
# ``rmdir`` (they take a child of the current directory away). A call of one cannot break a
# bound that held before it, so it skips the snapshot and the walk after it (67% of the
# file-system calls in BFCL's ground truth). tests/bfcl/test_bfcl_state_bounds.py checks each
# against the installed bfcl-eval.
_SIZE_KEEPING = {"GorillaFileSystem": frozenset({"pwd", "ls", "cd", "cat", "find", "wc", "sort", "grep", "du", "tail",
                                                 "diff", "rm", "rmdir"})}
_TOO_DEEP = object()


def _roots(instance: Any) -> list[Any]:
    """Where a walk of one class's state starts, so that it sees everything a call can reach by
    navigating, once: every attribute but a ``Directory``, and for a ``Directory`` attribute the
    top of its ``parent`` chain and each node of the chain that its parent does not hold (``rm``
    or ``mv`` of a directory above the current one leaves it reachable by ``cd ..`` only). A
    current directory under ``root`` is so walked once, from ``root``; a chain longer than the
    depth bound is itself past the bound."""
    roots: list[Any] = []

    def add(node: Any) -> None:
        if not any(r is node for r in roots):
            roots.append(node)

    for value in vars(instance).values():
        fields = _UP_FIELDS.get(type(value).__name__)
        if fields is None:
            roots.append(value)
            continue
        up, down = fields
        node, steps = value, 0
        while (parent := getattr(node, up, None)) is not None:
            steps += 1
            if steps > MAX_STATE_DEPTH:
                add(_TOO_DEEP)
                break
            if not any(v is node for v in getattr(parent, down, {}).values()):
                add(node)  # nothing above holds it: its subtree is walked from here
            node = parent
        else:
            add(node)
    return roots


def state_size(instance: Any, max_values: int | None = None) -> tuple[int, int, int]:
    """``(values, characters, depth)`` of ``instance``'s state as the checker walks it (a shared
    subtree counts each time it is reached), from :func:`_roots`. Iterative, and it stops once
    it has counted more than ``max_values`` values or gone deeper than :data:`MAX_STATE_DEPTH`,
    so it costs at most about that many steps whatever the state holds (shared, cyclic, deep)."""
    max_values = MAX_STATE_VALUES if max_values is None else max_values
    stack: list[tuple[Any, int]] = []
    values = chars = deepest = 0
    children: Iterable[Any] = _roots(instance)
    depth = 0
    while True:  # count a container's leaves in place; only containers go on the stack
        for child in children:
            values += 1
            kind = type(child)
            if kind is str:
                chars += len(child)
            elif kind not in JSON_SCALARS:
                stack.append((child, depth + 1))
        if values > max_values or not stack:
            break
        item, depth = stack.pop()
        if depth > deepest:
            deepest = depth
        if deepest > MAX_STATE_DEPTH or item is _TOO_DEEP:
            deepest = max(deepest, MAX_STATE_DEPTH + 1)
            break
        kind = type(item)
        if kind is dict or isinstance(item, dict):
            children = itertools.chain.from_iterable(item.items())
        elif isinstance(item, (list, tuple, set, frozenset)):
            children = item
        else:
            fields = _OBJECT_FIELDS.get(kind.__name__, ())
            children = [getattr(item, f, None) for f in fields]
    return values, chars, deepest


def state_problem(instance: Any) -> str | None:
    """What breaks :data:`STATE_LIMITS` in ``instance``'s state, or ``None``."""
    values, chars, depth = state_size(instance)
    if depth > MAX_STATE_DEPTH:
        return f"it would nest deeper than {MAX_STATE_DEPTH} levels (a directory inside itself?)"
    if values > MAX_STATE_VALUES:
        return f"it would hold more than {MAX_STATE_VALUES} values"
    if chars > MAX_STATE_CHARS:
        return f"it would hold more than {MAX_STATE_CHARS} characters"
    return None


#: (class, long_context, the config's marshal bytes) -> the pickled attributes of an instance
#: loaded from that config; bounded, cleared when full.
_LOADED: dict[tuple[str, bool, bytes], bytes] = {}
MAX_LOADED = 2048


def _restored_random(version: int, words: bytes, gauss_next: float | None) -> random.Random:
    """A ``random.Random`` in the state :func:`_random_reduced` wrote. ``Random.__new__`` with a
    seed skips what unpickling a generator does by default, ``Random()``: seeding it from
    ``os.urandom`` (twice) only for ``setstate`` to overwrite it, at every reset and every
    reference replay of an entry with the message, trading or travel API."""
    internal = _INTERNAL_STATES.get(words)
    if internal is None:
        if len(_INTERNAL_STATES) >= MAX_STATES:
            _INTERNAL_STATES.clear()
        internal = _INTERNAL_STATES[words] = tuple(array("I", words))
    rng = random.Random.__new__(random.Random, 0)
    rng.setstate((version, internal, gauss_next))
    return rng


#: A generator's words -> the tuple ``setstate`` reads: immutable, so every episode's generator
#: is set from one (the 625 ints of a state cost more to make than the rest of a restore). All
#: of BFCL's entries load 3 distinct states; a tuple is 22 KiB, so the bound is kept small.
_INTERNAL_STATES: dict[bytes, tuple[int, ...]] = {}
MAX_STATES = 64


def _random_reduced(rng: random.Random) -> tuple:
    version, internal, gauss_next = rng.getstate()  # 624 32-bit words and an index below 625
    return _restored_random, (version, array("I", internal).tobytes(), gauss_next)


#: How the loaded attributes are pickled: as ``pickle`` does (a live view of ``copyreg``'s table),
#: but a ``random.Random`` (exactly that type) as its state's words.
_DISPATCH = ChainMap({random.Random: _random_reduced}, copyreg.dispatch_table)


def _pickled(attributes: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(attributes)
    return buffer.getvalue()


def _fresh_instance(name: str, config: Any, long_context: bool) -> Any:
    """A new instance of bfcl-eval's class ``name`` loaded from ``config``, owning all it holds.

    Loading (``_load_scenario`` on a deep copy) is most of a reset, and every episode of an
    entry loads the same config, so the loaded attributes are kept per config as pickle bytes:
    immutable, and each episode unpickles instances of its own, as fresh as a load. A config
    that ``marshal`` cannot key, or attributes that ``pickle`` cannot write or read back, load
    every time."""
    instance = loader.backend_class(name)()
    if loader.stateless(name):
        instance.__dict__ = deep_copy_objects(instance.__dict__)
        return instance
    try:
        key: tuple | None = (name, long_context, marshal.dumps(config))
    except ValueError:
        key = None
    data = _LOADED.get(key) if key is not None else None
    if data is None:
        instance._load_scenario(deep_copy(config), long_context=long_context)
        try:
            data = _pickled(instance.__dict__)
            attributes = pickle.loads(data)  # bytes that do not read back are not kept
        except Exception:  # noqa: BLE001 - whatever an object's pickling raises: copy it as before
            # unlink module-level data (see above); one copy of the whole dict, so attributes
            # that share objects (the file system's current directory) still share them
            instance.__dict__ = deep_copy_objects(instance.__dict__)
            return instance
        instance.__dict__ = attributes
        if key is not None and MAX_LOADED:
            if len(_LOADED) >= MAX_LOADED:
                _LOADED.clear()
            _LOADED[key] = data
        return instance
    instance.__dict__ = pickle.loads(data)  # one copy of the whole dict, shared objects still shared
    return instance


class BFCLBackend:
    """The state of one BFCL entry: fresh bfcl-eval instances of its involved classes. A
    :class:`~seal_envs.core.source.ToolBackend` of its own, not a native ``Backend``: its tools
    are bfcl-eval's methods, which depend on the entry, and its state lives in their instances.

    ``state`` holds ``initial_config``, ``involved_classes`` and ``long_context`` (read only).
    """

    domain = "bfcl"
    POLICIES: Mapping[str, str] = {}

    def __init__(self, state: Mapping[str, Any]):  # no deep copy of the whole config: each instance copies its part
        self.state = dict(state)
        config = state.get("initial_config", {})
        self.instances: dict[str, Any] = {}
        for name in state["involved_classes"]:
            self.instances[name] = _fresh_instance(name, config.get(name, {}), bool(state.get("long_context", False)))
        self.owners, self.signatures, self.specs = _entry_tools(tuple(self.instances))
        # the classes whose state a call can duplicate (bfcl-eval's Directory and File trees): the
        # others only ever add what a call carries, so their state grows at most by an action a call
        self.bounded = {name for name, instance in self.instances.items()
                        if any(type(v).__name__ in _OBJECT_FIELDS for v in vars(instance).values())}
        self.responses: list[str] = []
        self._spelled: dict[str, dict[str, Any]] = {}  # class -> its state as comparable_state last spelled it
        self._reached: set[str] = set()  # the classes a call has run on since then

    def tool_specs(self) -> dict[str, ToolSpec]:
        return dict(self.specs)

    def parse_action(self, action: Any) -> ParsedAction:
        """JSON, Hermes and OpenAI calls, and BFCL's Python syntax (read with ``ast``)."""
        return parse_bfcl_action(action, self.signatures, self.schemas)

    @cached_property
    def schemas(self) -> dict[str, Mapping[str, Any]]:
        """Tool -> parameters: types the values of XML calls (Qwen3-Coder writes them as text)."""
        return {name: spec.parameters for name, spec in self.specs.items()}

    def comparable_state(self) -> dict[str, Any]:
        """Per class, its public attributes (what BFCL's ``state_checker`` compares); under
        ``_responses`` the text of every call so far (for the response check, never compared).

        A class that no call has reached since its last spelling still has the state spelled
        then (its state changes only through :meth:`execute`), so that spelling is handed out
        again: a turn calls one or two of an entry's classes, and spelling every class at every
        turn's end was a tenth of a long-context episode. States are read, never changed."""
        state: dict[str, Any] = {}
        for name, inst in self.instances.items():
            spelled = self._spelled.get(name)
            if spelled is None or name in self._reached:
                spelled = self._spelled[name] = {k: jsonable(v) for k, v in vars(inst).items() if not k.startswith("_")}
            state[name] = spelled
        self._reached.clear()
        state[RESPONSES_KEY] = list(self.responses)
        return state

    def _reject(self, event: CallEvent) -> CallEvent:
        self.responses.append(f"Error during execution: {event.message}")
        return event

    def execute(self, call: ToolCall, available: Iterable[str] | None = None, *, copy_result: bool = True) -> CallEvent:
        """Validate and run one call; never raises for anything the caller sent.

        ``copy_result=False``: the event carries no copy of the result (``result`` is ``None``).
        The reference replay keeps only the states and the responses' texts, and copying each
        result for an event it drops was a tenth of a long-context replay."""
        refused = unavailable(call, self.owners, available)
        if refused is not None:
            return self._reject(refused)
        error = validate_arguments(call.name, self.specs[call.name].parameters, call.arguments)
        limits = _limits_schema(call.name)
        if error is None and limits is not None:
            error = validate_arguments(call.name, limits, call.arguments)
            if error is not None:
                error = type(error)(error.param, error.problem, error.message + " (a bound of this environment)")
        if error is not None:
            return self._reject(CallEvent("schema_violation", call.name, error.param, error.message,
                                          hint=error.problem))
        owner = self.owners[call.name]
        instance = self.instances[owner]
        method = getattr(instance, call.name)
        self._reached.add(owner)
        bounded = owner in self.bounded and call.name not in _SIZE_KEEPING.get(owner, ())
        before = ObjectSnapshot(instance.__dict__) if bounded else None  # put back if the call breaks a bound
        failure = None
        try:  # as in bfcl-eval, turning the result into text is part of the call (a huge int fails there)
            with _NoGlobalPrecision():
                result = method(**schema_typed(self.specs[call.name].parameters, deep_copy(dict(call.arguments))))
                text = result_text(result)
                value = jsonable(result) if copy_result else None  # at the precision the call asked for
        except Exception as e:  # noqa: BLE001 - bfcl-eval records every exception as the call's result
            failure = e
        problem = state_problem(instance) if before is not None else None
        if problem is not None:
            instance.__dict__ = before.restore()  # the same instance: the backend keeps pointing at it
            message = f"{call.name} was not carried out: {problem}, past a bound of this environment"
            self.responses.append(f"Error during execution: {message}")
            return CallEvent("tool_error", call.name, message=message)
        if failure is not None:
            self.responses.append(f"Error during execution: {failure}")
            return CallEvent("tool_error", call.name, message=f"{type(failure).__name__}: {failure}")
        self.responses.append(text)
        if isinstance(result, dict) and set(result) == {"error"}:
            return CallEvent("tool_error", call.name, message=str(result["error"]))
        if not copy_result:
            return CallEvent("ok", call.name)
        return CallEvent("ok", call.name, result=value, result_json=_spelled_alike(result, value, text))
