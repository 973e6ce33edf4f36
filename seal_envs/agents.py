"""Reference agents: an oracle that follows the reference plan and a random agent.

Both act only through the public env API (``reset``/``step`` and the ``info`` dict); the oracle
reads the current task from ``env.unwrapped.task``, as a person with the answer key would.
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable

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

