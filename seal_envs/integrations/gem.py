"""SEAL's environments as GEM environments (``gem-llm``, tested with 0.1.0).

``import seal_envs.integrations.gem`` registers every ``seal/`` id with GEM, so GEM's own API
makes them::

    import gem
    import seal_envs.integrations.gem  # noqa: F401
    env = gem.make("seal/ToolUse-Bank-v0", seed=0)
    envs = gem.make_vec(["seal/ToolUse-v0"] * 4, seed=0)   # copy i is seeded seed + i

What GEM's loop sees: ``reset(seed=None, task_id=None, index=None)`` returns ``(text, info)``;
``step(action)`` returns ``(text, reward, terminated, truncated, info)`` with the env's whole
``info`` (``step_label`` every step; ``verdict``, ``step_labels``, ``official_turn_tags`` and
``official_progress`` at the end) plus ``info["seal"]``, the episode's plain-JSON record
(:func:`~seal_envs.integrations.common.final_record`), on the last step.

GEM's vector envs reset a finished copy in the same step (``SAME_STEP`` autoreset) and return
the reset's ``info`` in place of the last step's, which loses the labels. So the reset that
follows a finished episode carries that episode's last ``info`` as ``info["final_info"]`` and
its last observation as ``info["final_obs"]`` (Gymnasium's names for the same thing).

Co-evolution: ``gem.make(id, surface_channel=PATH)`` shows the newest surface published to
that :class:`~seal_envs.integrations.channel.SurfaceChannel` at every reset (GEM's async vector
env runs copies in threads of one process; the channel works across processes as well).
"""

from __future__ import annotations

import os
from typing import Any

import gem as _gem

from seal_envs.integrations.common import final_record, is_final, make_env, reset_arguments

__all__ = ["SealGemEnv", "register_all"]


class SealGemEnv(_gem.Env):
    """One ``seal/`` env behind GEM's ``Env`` interface.

    ``seal_id``: the Gymnasium id; ``seed``: the first reset's seed when ``reset`` gets none
    (``gem.make_vec`` passes ``seed + i`` to copy ``i``, so copies play different tasks);
    ``surface_channel``: a channel path; other keywords go to ``gym.make`` (``max_steps``,
    ``reward_mode``, ``call_format``, ``split``...)."""

    def __init__(self, seal_id: str = "seal/ToolUse-v0", seed: int | None = None,
                 surface_channel: str | os.PathLike | None = None, **env_kwargs: Any):
        super().__init__()
        self.seal_id = seal_id
        self.env = make_env(seal_id, surface_channel=surface_channel, **env_kwargs)
        self.seed = seed
        self._seeded = False
        self._final: tuple[str, dict] | None = None  # the last observation and info of an ended episode

    def reset(self, seed: int | None = None, task_id: str | None = None, index: int | None = None,
              **row: Any) -> tuple[str, dict[str, Any]]:
        """Extra keywords are a dataset row's fields (``split``, ``domain``, ``difficulty``...).

        GEM's ``Env.reset`` would seed Python's and numpy's global generators; SEAL's env draws
        from its own, so that is not called."""
        if seed is None and not self._seeded:
            seed = self.seed
        self._seeded = True
        row_seed, options = reset_arguments({**row, "task_id": task_id, "index": index, "seed": seed})
        obs, info = self.env.reset(seed=row_seed, options=options)
        if self._final is not None:
            info["final_obs"], info["final_info"] = self._final
            self._final = None
        return obs, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if is_final(info):
            info["seal"] = final_record(info, reward)
            self._final = (obs, info)
        return obs, float(reward), bool(terminated), bool(truncated), info

    def sample_random_action(self) -> str:
        from seal_envs.agents import RandomAgent

        rng = self.env.unwrapped.np_random
        return RandomAgent(seed=int(rng.integers(2**31))).act(self.env, {})

    def close(self) -> None:
        self.env.close()


def register_all() -> list[str]:
    """Register every ``seal/`` id with GEM (those already there are left as they are); return
    the ids. Runs on import; call it again after registering more Gymnasium ids."""
    import seal_envs

    from gem.envs.registration import ENV_REGISTRY

    ids = seal_envs.registered_ids(with_arguments=True)  # seal/MCP-v0 too: make(id, server=..., tasks=...)
    for env_id in ids:
        if env_id not in ENV_REGISTRY:
            _gem.register(env_id, SealGemEnv, seal_id=env_id)
    return ids


register_all()
