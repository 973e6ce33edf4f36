"""``MCPTaskSource``: an MCP server and a task file as a :class:`~seal_envs.core.source.TaskSource`.

Isolation: every episode starts from the server's initial state, either in a new process
(the default) or, when the task file names a ``reset_tool``, by calling it on the running
process (a reset that fails starts a new process instead). The reference plan is replayed on a
server of its own, never the episode's: the episode's final state stays readable after the
verdict. Reference states are cached per task, except those of a replay the server faulted in.

The source owns its processes; :meth:`MCPTaskSource.close` (``env.close()``) stops them all.
"""

from __future__ import annotations

import dataclasses
import os
import weakref
from typing import Any, Mapping, Sequence

from seal_envs.core.official import CHECK_ERROR, CHECK_FAIL, guarded
from seal_envs.core.source import Slot
from seal_envs.core.types import Check, Task, Verdict
from seal_envs.core.verifier import EpisodeRecord, verify_states

from .backend import STATE_ERROR_KEY, MCPBackend, tool_spec
from .client import MCPConnection, MCPServerError
from .taskfile import SPLITS, TaskFile, TaskFileError, load_task_file


class _Servers:
    """What every split view of one source shares: the task file, the tool specs, the episode's
    connection, the replay connection and the reference cache."""

    def __init__(self, command: Sequence[str], tasks: TaskFile, *, call_timeout: float, start_timeout: float,
                 reset_tool: str | None, cwd: str | None, env: Mapping[str, str] | None, max_result_chars: int):
        self.command, self.file = list(command), tasks
        self.call_timeout, self.start_timeout = call_timeout, start_timeout
        # None: the file's reset tool; False: none (a new process per episode even if the file names one)
        self.reset_tool = tasks.reset_tool if reset_tool is None else (reset_tool or None)
        self.cwd, self.env, self.max_result_chars = cwd, env, max_result_chars
        # The connections live in a dict that a finalizer closes: an env dropped without close()
        # (or alive at exit) stops its servers. A connection itself is never garbage while its
        # event-loop thread runs, so it cannot be the one to notice.
        self.live: dict[str, MCPConnection | None] = {"episode": None, "replay": None}
        weakref.finalize(self, _close_all, self.live)
        self.current: MCPBackend | None = None
        self.references: dict[str, tuple[list[Any], list[str]]] = {}
        self.starts = 0
        self.episode = self.start()
        try:
            self.specs = self._list_tools(self.episode)
            self._check_names()
        except BaseException:
            self.close()
            raise

    episode = property(lambda self: self.live["episode"], lambda self, c: self.live.__setitem__("episode", c))
    replay = property(lambda self: self.live["replay"], lambda self, c: self.live.__setitem__("replay", c))

    # -- processes ---------------------------------------------------------------------
    def start(self) -> MCPConnection:
        self.starts += 1
        return MCPConnection(self.command, cwd=self.cwd, env=self.env, start_timeout=self.start_timeout)

    def _list_tools(self, conn: MCPConnection) -> dict:
        listed, cursor = [], None
        for _ in range(100):  # pages
            result = conn.request("list_tools", *([cursor] if cursor else []), timeout=self.start_timeout)
            listed += result.get("tools") or []
            cursor = result.get("nextCursor")
            if not cursor:
                break
        specs = {}
        for tool in listed:
            spec = tool_spec(tool)
            if spec.name in specs:
                raise MCPServerError(f"the server lists tool {spec.name!r} twice")
            specs[spec.name] = spec
        hidden = self.hidden()
        return {name: spec for name, spec in specs.items() if name not in hidden} | {
            name: spec for name, spec in specs.items() if name in hidden}

    def hidden(self) -> set[str]:
        """Tools the agent is not shown: the reset tool and every task's state tool."""
        return ({self.reset_tool, self.file.reset_tool} | {c.state_tool for c in self.file.checks.values()}) - {None}

    def _check_names(self) -> None:
        """Every tool the task file names exists on the server (else: file, line and field)."""
        where = f"{self.file.path}"
        if self.reset_tool is not None and self.reset_tool not in self.specs:
            raise TaskFileError(f"{where}: field 'reset_tool': the server has no tool {self.reset_tool!r}")
        for task in self.file.tasks:
            line = self.file.lines[task.task_id]
            check = self.file.checks[task.task_id]
            if check.state_tool is not None and check.state_tool not in self.specs:
                raise TaskFileError(f"{where}:{line}: field 'state_tool': the server has no tool {check.state_tool!r}")
            for k, call in enumerate(task.plan):
                if call.name not in self.agent_specs:
                    raise TaskFileError(f"{where}:{line}: field 'plan[{k}].name': the server has no tool the agent "
                                        f"may call named {call.name!r}")
            for k, call in enumerate(task.initial_state["setup"]):
                if call["name"] not in self.specs:
                    raise TaskFileError(f"{where}:{line}: field 'setup[{k}].name': the server has no tool {call['name']!r}")

    @property
    def agent_specs(self) -> dict:
        hidden = self.hidden()
        return {n: s for n, s in self.specs.items() if n not in hidden}

    def _fresh(self, conn: MCPConnection | None) -> MCPConnection:
        """A connection in the initial state: ``conn`` reset by the reset tool, or a new process."""
        if conn is not None and self.reset_tool is not None and conn.fault is None:
            try:
                result = conn.request("call_tool", self.reset_tool, {}, timeout=self.call_timeout)
                if not result.get("isError"):
                    return conn
            except Exception:  # noqa: BLE001 - a failed reset falls back to a new process
                pass
        if conn is not None:
            conn.close()
        return self.start()

    def backend(self, conn: MCPConnection, task: Task) -> MCPBackend:
        check = self.file.checks.get(task.task_id)
        state = task.initial_state
        backend = MCPBackend(conn, self.agent_specs, call_timeout=self.call_timeout,
                             state_tool=check.state_tool if check else None,
                             state_arguments=check.state_arguments if check else {},
                             max_result_chars=self.max_result_chars)
        for k, call in enumerate(state.get("setup", ())):
            event = backend.call(call["name"], call.get("arguments", {}))
            if not event.ok:
                raise MCPServerError(f"task {task.task_id}: setup call {k} ({call['name']}) failed: {event.message}")
        return backend

    def open_episode(self, task: Task) -> MCPBackend:
        self.episode = self._fresh(self.episode)
        self.current = self.backend(self.episode, task)
        return self.current

    # -- the reference -----------------------------------------------------------------
    def reference(self, task: Task) -> tuple[list[Any], list[str]]:
        cached = self.references.get(task.task_id)
        if cached is not None:
            return cached
        try:
            self.replay = self._fresh(self.replay)
            sim = self.backend(self.replay, task)
        except Exception as e:  # noqa: BLE001 - verification runs inside step: it must not raise
            if self.replay is not None:
                self.replay.close()
                self.replay = None
            reason = f"the reference replay could not start: {e}"
            return [{STATE_ERROR_KEY: reason}] * len(task.turns), [reason] * len(task.turns)
        try:
            states, errors = [], []
            for turn in task.turns:
                events, error = guarded(lambda plan=turn.plan: [sim.execute(call) for call in plan])
                failed = [e for e in events or () if not e.ok]
                if failed and not error:  # a reference plan must run: the task file or the server is wrong
                    error = f"reference call {failed[0].tool} failed ({failed[0].kind}): {failed[0].message}"
                states.append(sim.comparable_state())
                errors.append(error)
        finally:
            if self.reset_tool is None and self.replay is not None:  # no way back to the initial state
                self.replay.close()
                self.replay = None
        if not any(STATE_ERROR_KEY in s for s in states) and not sim.fault:
            self.references[task.task_id] = (states, errors)
        elif sim.fault:
            errors = [e or f"the reference replay faulted: {sim.fault}" for e in errors]
        return states, errors

    def close(self) -> None:
        _close_all(self.live)
        self.current = None


def _close_all(live: dict) -> None:
    for key, conn in list(live.items()):
        live[key] = None
        if conn is not None:
            conn.close()


class MCPTaskSource:
    """The tasks of one split of a task file, run on an MCP server started with ``server`` (argv).

    ``generated`` is False (a fixed list, as BFCL's); ``held_out`` is empty. ``call_timeout``
    bounds every call (a server that misses it is stopped and the call is an ``env_error``);
    ``start_timeout`` bounds starting and initializing a server. ``reset_tool`` overrides the
    task file's (``False``: a new process per episode even where the file names a reset tool)."""

    generated = False
    held_out: tuple[str, ...] = ()

    def __init__(self, server: Sequence[str] | str, tasks: str | os.PathLike | TaskFile, split: str = "train", *,
                 call_timeout: float = 10.0, start_timeout: float = 30.0, reset_tool: str | bool | None = None,
                 cwd: str | None = None, env: Mapping[str, str] | None = None, max_result_chars: int = 32_768,
                 _shared: _Servers | None = None):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        if call_timeout <= 0 or start_timeout <= 0:
            raise ValueError(f"timeouts must be positive, got call_timeout={call_timeout}, start_timeout={start_timeout}")
        self.split = split
        if _shared is None:
            if isinstance(server, str):
                server = server.split()
            file = tasks if isinstance(tasks, TaskFile) else load_task_file(tasks)
            _shared = _Servers(server, file, call_timeout=call_timeout, start_timeout=start_timeout,
                               reset_tool=reset_tool, cwd=cwd, env=env, max_result_chars=max_result_chars)
        self._shared = _shared
        self._tasks = tuple(t for t in _shared.file.tasks if t.split == split)

    @property
    def servers(self) -> _Servers:
        return self._shared

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t.domain for t in self._shared.file.tasks))

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, index: int) -> Task:
        if not 0 <= index < len(self._tasks):
            raise IndexError(f"{self.split} has {len(self._tasks)} tasks in {self._shared.file.path}, "
                             f"index {index} is out of range")
        return self._tasks[index]

    def slot(self, index: int) -> Slot:
        task = self[index]
        return Slot(task.domain, task.difficulty, task.seed)

    def indices(self, domain: str | None = None, difficulty: int | None = None) -> list[int]:
        return [i for i, t in enumerate(self._tasks) if (domain is None or t.domain == domain)
                and (difficulty is None or t.difficulty == difficulty)]

    def backend_for(self, task: Task):
        """A fresh episode's backend, on a server in its initial state (the env calls it with the
        task's initial state, which names the setup calls and the state tool)."""
        return lambda initial_state: self._shared.open_episode(task)

    def task_from_id(self, task_id: str) -> Task:
        for task in self._shared.file.tasks:
            if task.task_id == task_id:
                return task
        raise ValueError(f"no task {task_id!r} in {self._shared.file.path}")

    def with_split(self, split: str) -> "MCPTaskSource":
        return MCPTaskSource((), (), split, _shared=self._shared)

    def close(self) -> None:
        """Stop every server process of this source (and of its split views)."""
        self._shared.close()

    # -- verification --------------------------------------------------------------------
    def verify(self, task: Task, record: EpisodeRecord) -> Verdict:
        check = self._shared.file.checks.get(task.task_id)
        backend = self._shared.current
        if check is not None and check.function is not None:
            verdict = self._verify_by_function(task, record, check, backend)
        else:
            expected, errors = self._shared.reference(task)
            verdict = verify_states(task, expected, errors, record)
        if backend is not None and backend.fault:
            verdict = _with_failed_state(verdict, task, record, f"MCP server fault: {backend.fault}", CHECK_ERROR)
        return verdict

    def _verify_by_function(self, task: Task, record: EpisodeRecord, check, backend: MCPBackend | None) -> Verdict:
        reached = [s if s is not None else {} for s in record.turn_states]
        expected = reached + [{}] * (len(task.turns) - len(reached))
        verdict = verify_states(task, expected, [""] * len(task.turns), record)
        if len(record.turn_states) < len(task.turns):
            return verdict  # the last turn was not reached: its state check already failed
        state = backend.read_state() if backend is not None and check.state_tool else None
        trajectory = {"calls": _with_turns(backend.trajectory if backend is not None else [], record),
                      "answers": list(record.turn_answers)}
        outcome, error = guarded(lambda: check.function(state, trajectory))
        if error:
            return _with_failed_state(verdict, task, record, f"check {check.check} raised {error}", CHECK_ERROR)
        passed, detail = outcome if isinstance(outcome, tuple) and len(outcome) == 2 else (outcome, "")
        if not isinstance(passed, bool):
            return _with_failed_state(verdict, task, record, f"check {check.check} returned {passed!r}, "
                                                             f"expected True/False or (bool, detail)", CHECK_ERROR)
        if passed:
            return verdict
        return _with_failed_state(verdict, task, record, f"check {check.check}: {detail or 'failed'}", CHECK_FAIL)


def _with_turns(calls: list[dict], record: EpisodeRecord) -> list[dict]:
    """The backend's call log with the user turn of each call: the env records one result per
    call per turn (None for a failed one), so the counts place every call."""
    turns = [t for t, results in enumerate(record.turn_results) for _ in results]
    last = len(record.turn_results)
    return [{"turn": turns[k] if k < len(turns) else last, **call} for k, call in enumerate(calls)]


def _with_failed_state(verdict: Verdict, task: Task, record: EpisodeRecord, detail: str, outcome: str) -> Verdict:
    """``verdict`` with the state check of the last reached user turn failed for ``detail``."""
    turn = max(0, min(len(record.turn_states), len(task.turns)) - 1)
    name = f"state_turn_{turn}"
    checks = tuple(Check(name, False, detail, turn) if c.name == name else c for c in verdict.checks)
    passed = list(verdict.turns_passed)
    passed[turn] = False
    facts = list(verdict.turn_facts)
    if facts and facts[turn].state != CHECK_ERROR:
        facts[turn] = dataclasses.replace(facts[turn], state=outcome)
    return Verdict(checks, sum(passed) / len(passed), tuple(passed), tuple(facts))


def mcp_task_source(server: Sequence[str] | str, tasks: str | os.PathLike, split: str = "train",
                    **kwargs: Any) -> MCPTaskSource:
    """:class:`MCPTaskSource` (the name the env factory and the CLI call)."""
    return MCPTaskSource(server, tasks, split, **kwargs)


__all__ = ["MCPTaskSource", "mcp_task_source"]
