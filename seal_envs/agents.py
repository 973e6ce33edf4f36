"""Agents and the two shapes they come in: reference agents, and batch agents for evaluation.

The oracle (follows the reference plan) and the random agent act only through the public env API
(``reset``/``step`` and the ``info`` dict); the oracle reads the current task from
``env.unwrapped.task``, as a person with the answer key would. They are *per-episode* agents
(``reset()``, ``act(env, info)``); :func:`seal_envs.eval.evaluate` drives *batch* agents
(:class:`BatchAgent`), and :class:`PerEpisodeAgents` makes one of a per-episode factory.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Protocol

import gymnasium as gym

from seal_envs.core.call_formats import call_format as call_format_named
from seal_envs.core.types import Task, ToolCall


class OracleAgent:
    """Per user turn: ask for a withheld value first, make the reference calls one per step,
    then answer with what the user asked for.

    ``mutate`` lets tests derive broken oracles: it receives the planned actions of a turn
    (a list of ToolCall or str) and the turn, and returns the actions to take instead.
    ``call_format`` spells the calls in a model family's format
    (:data:`~seal_envs.core.call_formats.CALL_FORMATS`; default Hermes ``<tool_call>`` blocks).
    """

    def __init__(self, mutate: Callable[[list, int, Task], list] | None = None, call_format: str = "hermes"):
        self.mutate = mutate
        spell = call_format_named(call_format).spell
        if spell is None:
            raise ValueError(f"call format {call_format!r} has no spelling of its own (it is the model's chat template)")
        self.spell = spell
        self._queue: list[Any] = []
        self._turn = -1

    def reset(self) -> None:
        self._queue, self._turn = [], -1

    def plan_turn(self, task: Task, turn: int) -> list:
        t = task.turns[turn]
        actions: list[Any] = []
        if t.withheld is not None:
            actions.append(f"Could you tell me the {t.withheld.param.replace('_', ' ')}, please?")
        actions.extend(t.plan)
        if t.plan or t.required_outputs:
            actions.append("Done. " + " ".join(t.required_outputs) if t.required_outputs else "Done.")
        else:
            actions.append("Sorry, I cannot do that with the tools I have right now.")
        return actions

    def act(self, env: gym.Env, info: dict) -> str:
        task = env.unwrapped.task
        if info["user_turn"] != self._turn:
            self._turn = info["user_turn"]
            planned = self.plan_turn(task, self._turn)
            self._queue = self.mutate(planned, self._turn, task) if self.mutate else planned
        if not self._queue:
            return "Done."
        nxt = self._queue.pop(0)
        return self.spell([nxt]) if isinstance(nxt, ToolCall) else nxt


class RandomAgent:
    """Calls a random available tool with loosely typed random arguments, or answers."""

    def __init__(self, seed: int = 0, answer_prob: float = 0.2):
        self.rng = random.Random(seed)
        self.answer_prob = answer_prob

        self.tools: list = []

    def reset(self) -> None:
        self.tools = []

    def _value(self, prop: dict) -> Any:
        if "enum" in prop:
            return self.rng.choice(prop["enum"])
        return {"integer": self.rng.randint(0, 100), "number": round(self.rng.uniform(0, 1000), 2),
                "boolean": self.rng.random() < 0.5, "array": []}.get(prop.get("type"), f"x{self.rng.randint(0, 99)}")

    def act(self, env: gym.Env | None, info: dict) -> str:
        """``info`` carries ``tools`` when the list changes (:class:`~seal_envs.env.ToolUseEnv`),
        so the agent keeps the last one it saw; ``env`` may be ``None`` (a vector env's copy)."""
        if "tools" in info:
            self.tools = info["tools"]
        elif env is not None:
            self.tools = env.unwrapped.tools
        tools = self.tools
        if not tools or self.rng.random() < self.answer_prob:
            return "I am not sure."
        fn = self.rng.choice(tools)["function"]
        props = fn["parameters"].get("properties", {})
        args = {k: self._value(v) for k, v in props.items() if k in fn["parameters"].get("required", []) or self.rng.random() < 0.3}
        return "<tool_call>" + json.dumps({"name": fn["name"], "arguments": args}) + "</tool_call>"


def run_episode(env: gym.Env, agent, *, seed: int | None = None, options: dict | None = None,
                max_actions: int = 200) -> tuple[float, dict, list[str]]:
    """Play one episode; return the final reward, the final info and the actions taken."""
    agent.reset()
    obs, info = env.reset(seed=seed, options=options)
    actions: list[str] = []
    for _ in range(max_actions):
        action = agent.act(env, info)
        actions.append(action)
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info, actions
    raise RuntimeError(f"episode did not end within {max_actions} actions")


# -- batch agents: what evaluate drives ---------------------------------------------------
class BatchAgent(Protocol):
    """Answers several episodes at once (``slots`` are the episodes' positions in the batch)."""

    def start(self, seeds: Sequence[int]) -> None: ...

    def act_batch(self, envs: Sequence[gym.Env], infos: Sequence[dict], slots: Sequence[int]) -> list[Any]: ...


class PerEpisodeAgents:
    """Adapts a factory ``seed -> agent`` (``reset()``, ``act(env, info)``) to :class:`BatchAgent`.

    ``concurrency`` is how many of the batch's ``act`` calls may run at once. 1 (the default)
    asks the episodes one after the other; more suits agents that wait on I/O (a model server):
    :meth:`act_batch_async` gathers the calls on an asyncio loop, each in a thread of a pool of
    ``min(concurrency, active episodes)`` workers, so that many requests are in flight. Either way
    an agent that raises fails only its own episode (an :class:`AgentFailure` in its place) and
    the answers come back in the order of ``slots``.
    """

    def __init__(self, factory: Callable[[int], Any], concurrency: int = 1):
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.factory = factory
        self.concurrency = concurrency
        self.agents: list[Any] = []

    def start(self, seeds: Sequence[int]) -> None:
        self.agents = [self.factory(s) for s in seeds]
        for a in self.agents:
            a.reset()

    def act_batch(self, envs, infos, slots) -> list[Any]:
        if self.concurrency == 1 or len(slots) <= 1:
            return [_act_or_fail(self.agents[s], e, i) for e, i, s in zip(envs, infos, slots)]
        return _run_coroutine(self.act_batch_async(envs, infos, slots))

    async def act_batch_async(self, envs, infos, slots) -> list[Any]:
        """:meth:`act_batch` for a caller that runs its own event loop: at most ``concurrency``
        ``act`` calls at once, each in a worker thread (``act`` blocks: the stdlib HTTP client)."""
        loop = asyncio.get_running_loop()
        pool = ThreadPoolExecutor(max_workers=max(1, min(self.concurrency, len(slots))),
                                  thread_name_prefix="seal-agent")
        try:
            return list(await asyncio.gather(*(loop.run_in_executor(pool, _act_or_fail, self.agents[s], e, i)
                                               for e, i, s in zip(envs, infos, slots))))
        finally:  # interrupted: queued calls never start; running ones end within their own timeout
            pool.shutdown(wait=False, cancel_futures=True)


def _run_coroutine(coroutine) -> Any:
    """Run ``coroutine`` to its end from synchronous code, also when this thread already runs an
    event loop (a notebook): then on a fresh loop in a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="seal-agent-loop") as helper:
        return helper.submit(asyncio.run, coroutine).result()


class AgentFailure:
    """What an agent that raised returns instead of an action: :func:`evaluate` ends that episode
    (verified, as a truncation) and records the error in its result, and the others go on."""

    def __init__(self, error: BaseException):
        self.message = f"{type(error).__name__}: {error}"[:500]


def _act_or_fail(agent: Any, env: Any, info: Any) -> Any:
    try:
        return agent.act(env, info)
    except Exception as e:  # noqa: BLE001 - one server fault must not lose the episodes already played
        return AgentFailure(e)
