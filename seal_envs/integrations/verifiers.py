"""SEAL environments as a verifiers v1 environment (verifiers 0.4: ``vf.Env``, ``vf.Taskset``, ``vf.Task``).

verifiers loads an environment by a *top-level* module name whose ``__all__`` exports one
``Env`` and one ``Taskset`` subclass (and here one ``Harness``); the ``seal_verifiers`` package
of this project is that module, so::

    vf-eval seal-verifiers -m MODEL --client.base-url http://127.0.0.1:8000/v1 \\
        --env.player.runtime.type subprocess --env.taskset.env-id seal/ToolUse-Bank-v0 \\
        --env.taskset.split test --env.taskset.count 20

* :class:`SealTaskset` yields one :class:`SealTask` per task of a split of any ``seal/`` id
  (native domains and BFCL): its data names the task (``info = {"env_id", "task_id"}``), with
  no prompt, because the opening messages depend on the surface shown when the episode starts.
* :class:`SealEnv` plays it: it resets the env (showing the newest surface of
  ``surface_channel`` on a training task), opens the exchange with the env's opening messages,
  tool list included in the system message, hands each reply of the agent to ``env.step``
  (whatever it writes is a labelled turn), answers with the env's reply, and ends the exchange
  when the episode ends. The reward ``seal_reward`` is the episode's reward; the trace's
  ``info["seal"]`` is the final record (verdict, per-step labels, official per-user-turn tags
  and progress, task, surface version).
* :class:`SealHarness` is verifiers' ``null`` chat program run by this Python interpreter
  instead of a ``uv``-provisioned one, so a local run needs no download (the ``null``
  harness installs ``uv`` and the program's dependencies at first use).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.harnesses.null.harness import NullHarness
from verifiers.v1.harnesses.utils.launch import CHAT_PROGRAM_SOURCE, launch_chat_program

from seal_envs.integrations.episode import DEFAULT_ENV_ID, RowError, TextEpisode, failed_record

__all__ = ["SealEnv", "SealEnvConfig", "SealHarness", "SealTask", "SealTaskset", "SealTasksetConfig",
           "chat_turn"]


class SealTasksetConfig(vf.TasksetConfig):
    env_id: str = DEFAULT_ENV_ID
    """The ``seal/`` id whose tasks are played."""
    split: str = "train"
    """train, test or ood (BFCL: its own splits)."""
    count: int | None = None
    """Play the first ``count`` tasks of the split (None: all)."""
    env_kwargs: dict[str, Any] = {}
    """Keyword arguments for ``gym.make`` (``max_steps``, ``domains``, ``call_format``, ...)."""
    surface_channel: str | None = None
    """Path of the ``SurfaceChannel`` whose newest surface training tasks show (co-evolution)."""


class SealData(vf.TaskData):
    info: dict
    """``{"env_id", "task_id", "split"}``: what the env reproduces the episode from."""


class SealTask(vf.Task[SealData, vf.State, vf.TaskConfig]):
    pass


class SealTaskset(vf.Taskset[SealTask, SealTasksetConfig]):
    def load(self) -> Iterator[SealTask]:
        import gymnasium as gym

        import seal_envs  # noqa: F401  (registers the ids)

        cfg = self.config
        env = gym.make(cfg.env_id, disable_env_checker=True, **cfg.env_kwargs)
        try:
            tasks = env.unwrapped.task_set
            tasks = tasks if tasks.split == cfg.split else tasks.with_split(cfg.split)
            count = len(tasks) if cfg.count is None else min(cfg.count, len(tasks))
            for i in range(count):
                task = tasks[i]
                yield SealTask(SealData(id=task.task_id, name=task.task_id, prompt=None,
                                        info={"env_id": cfg.env_id, "task_id": task.task_id, "split": cfg.split}),
                               cfg.task)
        finally:
            env.close()


def _tools_block(tools: Sequence[Mapping[str, Any]]) -> str:
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return f"Tools (one JSON schema per line):\n{lines}"


def chat_turn(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
              ) -> list[dict[str, str]]:
    """Env messages as one exchange turn: system and user messages as they are (the tool list
    written into the system message, since the chat program sends no ``tools``), tool results
    as user messages that keep the env's ``[tool:NAME]`` text (a tool message needs a call id
    that a call written as text does not have)."""
    out: list[dict[str, str]] = []
    for m in messages:
        content = m.get("content") or ""
        if m["role"] == "system":
            out.append({"role": "system", "content": f"{content}\n\n{_tools_block(tools)}" if tools else content})
        elif m["role"] == "tool":
            out.append({"role": "user", "content": content if content.startswith("[tool")
                        else f"[tool:{m.get('name', 'tool')}] {content}"})
        elif m["role"] == "user":
            out.append({"role": "user", "content": content})
    if tools and not any(m["role"] == "system" for m in out):
        out.insert(0, {"role": "system", "content": _tools_block(tools)})
    return out


class SealEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig()


class SealEnv(vf.Env[SealEnvConfig]):
    """The env steps host-side as the run's user: each reply of the player is one action."""

    def _channel(self) -> Any:
        path = getattr(self.taskset.config, "surface_channel", None)
        if path is None:
            return getattr(self, "channel", None)  # an object set on the env (tests, in-process owners)
        from seal_envs.integrations.channel import SurfaceChannel  # issue 28a's cross-process channel

        return SurfaceChannel(path)

    async def run(self, task: SealTask, agents: vf.Agents) -> None:
        cfg = self.taskset.config
        try:
            episode = TextEpisode.from_row(dict(task.data.info), channel=self._channel(),
                                           default_env_id=cfg.env_id, **cfg.env_kwargs)
        except RowError as e:
            episode = None
            error = str(e)
        async with agents.player.interaction(task) as interaction:
            if episode is None:  # no playable task: one turn that says so, reward 0, the error on the trace
                await interaction.turn(f"(no task: {error})")
            else:
                try:
                    segment = await interaction.turn(chat_turn(episode.messages, episode.tools))
                    while not segment.terminated:
                        new = episode.step(segment.last_reply)
                        if episode.done:
                            break
                        segment = await interaction.turn(chat_turn(new))
                finally:
                    record = episode.finish()
                    episode.close()
        trace = interaction.trace
        record = failed_record(error) if episode is None else record
        trace.record_reward("seal_reward", float(record["reward"]), 1.0)
        trace.info["seal"] = record


class SealHarness(NullHarness):
    """The ``null`` harness's chat program, run by ``sys.executable`` (this environment has its
    dependencies: openai, httpx, tenacity, certifi) instead of a ``uv`` script environment."""

    async def setup(self, runtime: vf.Runtime) -> None:
        self._program = f"{runtime.scripts_dir}/seal-chat-program.py" if hasattr(runtime, "scripts_dir") \
            else "seal-chat-program.py"
        await runtime.write(self._program, CHAT_PROGRAM_SOURCE.encode())

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, tool_interception_url=None):
        system_prompt, prompt = self.resolve_prompt(data)
        program = self._program

        class Local:
            """The runtime, with ``prepare_uv_script`` answering this interpreter."""

            def __getattr__(self, name: str) -> Any:
                return getattr(runtime, name)

            async def prepare_uv_script(self, script: Any, env: Any = None, *, activate: bool = True) -> list[str]:
                return [sys.executable, program]

        return await launch_chat_program(
            CHAT_PROGRAM_SOURCE, self.config, ctx, trace, Local(), endpoint, secret, mcp_urls, system_prompt, prompt,
            extra_args=[f"--tool-interception-url={tool_interception_url}"] if tool_interception_url else ())
