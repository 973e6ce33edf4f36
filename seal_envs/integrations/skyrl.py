"""SEAL's environments as SkyRL-Gym text environments (``skyrl-gym``, tested with 0.4.0).

``import seal_envs.integrations.skyrl`` registers every ``seal/`` id with ``skyrl_gym``; SkyRL's
generator then builds one env per dataset row, as for its own envs::

    env = skyrl_gym.make("seal/ToolUse-v0", env_config={"max_steps": 12}, extras=row)
    chat, meta = env.init(row["prompt"])       # the task's system and first user message
    out = env.step(model_text)                 # observations, reward, done, metadata

The row picks the task (``task_id``, ``index`` or ``seed``, at the top or in ``extra_info``:
:func:`~seal_envs.integrations.common.reset_arguments`); without one, the env draws a task.
:func:`~seal_envs.integrations.common.task_row` builds such rows from a split. ``init``
returns the env's own first messages (tools in the system message) in place of the row's
prompt, so a row's ``prompt`` may be a placeholder.

``env_config`` (SkyRL's per-env-class config): ``surface_channel`` (a
:class:`~seal_envs.integrations.channel.SurfaceChannel` path: the newest surface at every
``init``) and any keyword of the env (``max_steps``, ``reward_mode``, ``call_format``, ``split``);
a row's ``max_turns`` (SkyRL's name) sets ``max_steps``. Each ``step`` returns the new tool
results and user messages as chat messages and ``metadata`` with the step's ``step_label``;
on the last step ``metadata`` is the episode's plain-JSON record
(:func:`~seal_envs.integrations.common.final_record`), which ends in SkyRL's trajectory, and
``get_metrics()`` reports success, progress, steps and format errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from seal_envs.integrations.common import chat_messages, final_record, make_env, reset_arguments

__all__ = ["SealSkyRLEnv", "register_all"]


def _plain(value: Any) -> Any:
    """A plain copy of SkyRL's config objects (OmegaConf's ``DictConfig``/``ListConfig`` are
    mappings and sequences), so ``gym.make`` gets dicts, lists and scalars."""
    if isinstance(value, Mapping) or (hasattr(value, "items") and hasattr(value, "keys")):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [_plain(v) for v in value]
    return value


class SealSkyRLEnv(BaseTextEnv):
    """One episode of a ``seal/`` env for one dataset row (SkyRL makes an env per row)."""

    def __init__(self, env_config: Any = None, extras: Any = None, seal_id: str = "seal/ToolUse-v0"):
        super().__init__()
        config = _plain(env_config or {})
        self.extras = _plain(extras or {})
        channel = config.pop("surface_channel", None)
        if "max_turns" in self.extras:  # SkyRL's per-row step budget
            config["max_steps"] = int(self.extras["max_turns"])
        self.seal_id = seal_id
        self.env = make_env(seal_id, surface_channel=channel, **config)
        self.max_turns = self.env.unwrapped.max_steps
        self._record: dict[str, Any] | None = None
        self._format_errors = 0

    def init(self, prompt: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        seed, options = reset_arguments(self.extras)
        _, info = self.env.reset(seed=seed, options=options)
        self.turns, self._record, self._format_errors = 0, None, 0
        chat = chat_messages(info["new_messages"], info["tools"])
        return chat, {"task_id": info["task_id"], "domain": info["domain"], "tools": info["tools"]}

    def step(self, action: Any) -> BaseTextEnvStepOutput:
        if self._record is not None:  # SkyRL stops at done; a step after it is answered, not raised
            return BaseTextEnvStepOutput(observations=[], reward=0.0, done=True, metadata=dict(self._record),
                                         postprocessed_action=None)
        _, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        label = info["step_label"]
        self._format_errors += label.get("label") == "format_error"
        new = chat_messages(info["new_messages"])
        done = bool(terminated or truncated)
        if done:
            self._record = final_record(info, reward)
            metadata = {**self._record, "step_label": label}
            new = []  # nothing more for the model to read
        else:
            metadata = {"step_label": label, "step_index": info["user_turn"]}
        return BaseTextEnvStepOutput(observations=new, reward=float(reward), done=done, metadata=metadata,
                                     postprocessed_action=None)

    def get_metrics(self) -> dict[str, Any]:
        if self._record is None:
            return {"steps": self.turns, "format_errors": self._format_errors}
        return {"success": float(self._record["verdict"]["passed"]),
                "progress": float(self._record["verdict"]["progress"]),
                "official_progress": float(self._record["official_progress"]),
                "steps": self.turns, "format_errors": self._format_errors}

    def close(self) -> None:
        self.env.close()


def register_all() -> list[str]:
    """Register every ``seal/`` id with ``skyrl_gym`` (ids already there are left alone);
    return the ids. Runs on import."""
    import seal_envs

    ids = seal_envs.registered_ids(with_arguments=True)  # seal/MCP-v0 too: make(id, server=..., tasks=...)
    for env_id in ids:
        if env_id not in skyrl_gym.registry:
            skyrl_gym.register(id=env_id, entry_point=SealSkyRLEnv, kwargs={"seal_id": env_id})
    return ids


register_all()
