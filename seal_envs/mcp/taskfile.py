"""Task files a person writes by hand: JSON Lines (one task per line) or YAML (a list of tasks).

A task::

    {"id": "close-login-bug", "split": "train",
     "turns": [{"user": "Close the login ticket as fixed.", "withheld": {"ticket_id": "T-102"}}],
     "plan": [{"name": "close_ticket", "arguments": {"ticket_id": "T-102", "resolution": "fixed"}, "turn": 0}],
     "state_tool": "dump_state"}

Fields: ``id`` (unique), ``split`` (train, test or ood), ``turns`` (each ``{"user": text}`` with
optional ``withheld`` (one ``{param: value}`` the scripted user gives only when asked),
``reply`` (the words it gives it in) and ``answer_contains`` (strings the agent's answer to the
turn must contain)), ``plan`` (the reference calls, each ``{"name", "arguments", "turn"}``;
``turn`` defaults to 0), and the check: ``state_tool`` (a read-only tool whose result is the
state compared after every user turn with the reference plan's, as the native verifier does)
and/or ``check`` (``"module:function"``, called as ``function(state, trajectory)`` at the end,
where ``state`` is the ``state_tool`` result or None). Optional: ``setup`` (calls run on the
fresh server before the episode and before the reference replay), ``state_arguments``,
``difficulty`` (1-4; default from the plan's length), ``domain`` and ``reset_tool`` (a tool that
puts the server back to its initial state, so an episode needs no new process).

A line ``{"defaults": {...}}`` sets fields for every task after it. Every malformed task is a
:class:`TaskFileError` naming the file, the line and the field.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from seal_envs.core.types import Task, ToolCall, UserTurn, Withheld

SPLITS = ("train", "test", "ood")
TASK_FIELDS = ("id", "split", "turns", "plan", "state_tool", "check", "setup", "state_arguments", "difficulty",
               "domain", "reset_tool")
TURN_FIELDS = ("user", "withheld", "reply", "answer_contains")
CALL_FIELDS = ("name", "arguments", "turn")


class TaskFileError(ValueError):
    """A malformed task: the message starts with ``file:line:`` and names the field."""


@dataclass(frozen=True)
class TaskCheck:
    """How one task is judged: the state tool (and its arguments) and/or a check function."""

    state_tool: str | None
    state_arguments: Mapping[str, Any]
    check: str | None
    function: Callable[..., Any] | None


@dataclass(frozen=True)
class TaskFile:
    """The tasks of one file in file order, how each is judged, and the server-wide reset tool."""

    path: str
    tasks: tuple[Task, ...]
    checks: Mapping[str, TaskCheck]
    lines: Mapping[str, int]
    reset_tool: str | None


class _Where:
    def __init__(self, path: str, line: int):
        self.path, self.line = path, line

    def fail(self, field: str, problem: str) -> TaskFileError:
        return TaskFileError(f"{self.path}:{self.line}: field '{field}': {problem}")


def _string(where: _Where, field: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise where.fail(field, f"must be a non-empty string, got {json.dumps(value)[:60]}")
    return value


def _object(where: _Where, field: str, value: Any, fields: Sequence[str], what: str, shape: str) -> None:
    """``value`` is an object whose keys are among ``fields``, or an error naming the field."""
    if not isinstance(value, dict):
        raise where.fail(field, f"must be an object {shape}, got {type(value).__name__}")
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise where.fail(f"{field}.{unknown[0]}", f"unknown field; {what} has {', '.join(fields)}")


def _calls(where: _Where, field: str, value: Any, n_turns: int) -> list[tuple[int, ToolCall]]:
    if not isinstance(value, list):
        raise where.fail(field, f"must be a list of calls {{\"name\", \"arguments\", \"turn\"}}, got {type(value).__name__}")
    out = []
    for k, call in enumerate(value):
        f = f"{field}[{k}]"
        _object(where, f, call, CALL_FIELDS, "a call", "{\"name\", \"arguments\", \"turn\"}")
        name = _string(where, f"{f}.name", call.get("name"))
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise where.fail(f"{f}.arguments", f"must be an object, got {type(arguments).__name__}")
        turn = call.get("turn", 0)
        if type(turn) is not int or not 0 <= turn < max(n_turns, 1):
            raise where.fail(f"{f}.turn", f"must be a user turn index 0..{max(n_turns, 1) - 1}, got {turn!r}")
        out.append((turn, ToolCall(name, arguments)))
    return out


def _turn(where: _Where, k: int, turn: Any) -> tuple[str, Withheld | None, tuple[str, ...]]:
    f = f"turns[{k}]"
    _object(where, f, turn, TURN_FIELDS, "a turn", "{\"user\": text, \"withheld\": {param: value}}")
    message = _string(where, f"{f}.user", turn.get("user"))
    withheld = None
    if turn.get("withheld") is not None:
        w = turn["withheld"]
        if not isinstance(w, dict) or len(w) != 1:
            raise where.fail(f"{f}.withheld", f"must be one {{param: value}} the user gives when asked, got {json.dumps(w)[:60]}")
        (param, value), = w.items()
        reply = turn.get("reply", f"The {param.replace('_', ' ')} is {value}.")
        withheld = Withheld(param, value, _string(where, f"{f}.reply", reply))
    elif "reply" in turn:
        raise where.fail(f"{f}.reply", "a reply goes with a withheld value; this turn withholds none")
    outputs = turn.get("answer_contains", [])
    if isinstance(outputs, str):
        outputs = [outputs]
    if not isinstance(outputs, list) or not all(isinstance(o, (str, int, float)) for o in outputs):
        raise where.fail(f"{f}.answer_contains", "must be a list of strings")
    return message, withheld, tuple(str(o) for o in outputs)


def resolve_check(spec: str, base_dir: str | None = None) -> Callable[..., Any]:
    """``module:function`` as a callable; the task file's folder is searched first."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"must be 'module:function', got {spec!r}")
    if base_dir and base_dir not in sys.path:
        sys.path.insert(0, base_dir)
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ValueError(f"cannot import {module_name!r}: {e}") from None
    fn = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
    if not callable(fn):
        raise ValueError(f"{module_name!r} has no function {attr!r}")
    return fn


def _difficulty(n_calls: int) -> int:
    return 1 if n_calls <= 1 else 2 if n_calls <= 3 else 3 if n_calls <= 5 else 4


def parse_task(raw: Any, where: _Where, base_dir: str | None) -> tuple[Task, TaskCheck, str | None]:
    """One task object as a ``Task``, how it is judged and its reset tool."""
    if not isinstance(raw, dict):
        raise where.fail("(task)", f"a task is a JSON object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(TASK_FIELDS))
    if unknown:
        raise where.fail(unknown[0], f"unknown field; a task has {', '.join(TASK_FIELDS)}")
    for required in ("id", "split", "turns", "plan"):
        if required not in raw:
            raise where.fail(required, "missing (required)")
    task_id = _string(where, "id", raw["id"])
    split = raw["split"]
    if split not in SPLITS:
        raise where.fail("split", f"must be one of {', '.join(SPLITS)}, got {json.dumps(split)[:40]}")
    if not isinstance(raw["turns"], list) or not raw["turns"]:
        raise where.fail("turns", "must be a non-empty list of {\"user\": text} objects")
    turns = [_turn(where, k, t) for k, t in enumerate(raw["turns"])]
    plan = _calls(where, "plan", raw["plan"], len(turns))
    setup = [c for _, c in _calls(where, "setup", raw.get("setup", []), 1)]
    state_tool = raw.get("state_tool")
    if state_tool is not None:
        _string(where, "state_tool", state_tool)
    state_args = raw.get("state_arguments", {})
    if not isinstance(state_args, dict):
        raise where.fail("state_arguments", f"must be an object, got {type(state_args).__name__}")
    check, function = raw.get("check"), None
    if check is not None:
        _string(where, "check", check)
        try:
            function = resolve_check(check, base_dir)
        except ValueError as e:
            raise where.fail("check", str(e)) from None
    if state_tool is None and check is None:
        raise where.fail("state_tool", "missing: a task is judged by 'state_tool' (a read-only tool whose result "
                                       "is the state) or 'check' ('module:function')")
    difficulty = raw.get("difficulty", _difficulty(len(plan)))
    if type(difficulty) is not int or not 1 <= difficulty <= 4:
        raise where.fail("difficulty", f"must be an integer 1-4, got {difficulty!r}")
    domain = _string(where, "domain", raw.get("domain", "mcp"))
    reset_tool = raw.get("reset_tool")
    if reset_tool is not None:
        _string(where, "reset_tool", reset_tool)
    user_turns = tuple(UserTurn(message, tuple(c for t, c in plan if t == k), outputs, withheld)
                       for k, (message, withheld, outputs) in enumerate(turns))
    task = Task(task_id=task_id, domain=domain, split=split, seed=where.line, difficulty=difficulty,
                initial_state={"setup": [c.to_dict() for c in setup]}, turns=user_turns, template="mcp")
    return task, TaskCheck(state_tool, dict(state_args), check, function), reset_tool


def _records(path: str, text: str) -> list[tuple[int, Any]]:
    """(line, value) of every task record: JSON Lines, or a YAML list."""
    if path.endswith((".yaml", ".yml")):
        try:
            import yaml
        except ImportError:
            raise TaskFileError(f"{path}: reading YAML task files needs PyYAML (pip install pyyaml)") from None
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            raise TaskFileError(f"{path}:{mark.line + 1 if mark else 1}: not valid YAML: {e}") from None
        if root is None:
            return []
        if not isinstance(root, yaml.SequenceNode):
            raise TaskFileError(f"{path}:{root.start_mark.line + 1}: a YAML task file is a list of tasks")
        return [(node.start_mark.line + 1, yaml.SafeLoader(yaml.serialize(node)).get_single_data())
                for node in root.value]
    records = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as e:
            raise TaskFileError(f"{path}:{number}: not a JSON object ({e.msg} at column {e.colno})") from None
    return records


def load_task_file(path: str | os.PathLike) -> TaskFile:
    """Read and check every task of ``path``; the first problem raises :class:`TaskFileError`."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise TaskFileError(f"{path}: cannot read the task file: {e.strerror or e}") from None
    base_dir = os.path.dirname(os.path.abspath(path))
    defaults: dict[str, Any] = {}
    tasks, checks, lines, resets = [], {}, {}, {}
    for line, raw in _records(path, text):
        if isinstance(raw, dict) and set(raw) == {"defaults"}:
            if not isinstance(raw["defaults"], dict):
                raise TaskFileError(f"{path}:{line}: field 'defaults': must be an object of task fields")
            bad = sorted(set(raw["defaults"]) - set(TASK_FIELDS) - {"domain"})
            if bad or "id" in raw["defaults"]:
                raise TaskFileError(f"{path}:{line}: field 'defaults.{(bad or ['id'])[0]}': not a field defaults may set")
            defaults.update(raw["defaults"])
            continue
        merged = {**defaults, **raw} if isinstance(raw, dict) else raw
        task, check, reset = parse_task(merged, _Where(path, line), base_dir)
        if task.task_id in lines:
            raise TaskFileError(f"{path}:{line}: field 'id': {task.task_id!r} is already the id of line {lines[task.task_id]}")
        tasks.append(task)
        checks[task.task_id], lines[task.task_id], resets[line] = check, line, reset
    if not tasks:
        raise TaskFileError(f"{path}: no tasks (one JSON object per line, or a YAML list)")
    named = {r for r in resets.values()}
    if len(named) > 1:
        line = next(ln for ln, r in resets.items() if r != resets[min(resets)])
        raise TaskFileError(f"{path}:{line}: field 'reset_tool': every task of a file names the same reset tool "
                            f"(or none), got {sorted(map(str, named))}")
    return TaskFile(path, tuple(tasks), checks, lines, named.pop())
