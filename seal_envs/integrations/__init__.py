"""SEAL's environments inside other RL frameworks, and the surface shared across their processes.

Each adapter imports its framework lazily, so ``import seal_envs`` stays light:

- ``seal_envs.integrations.gem``: every ``seal/`` id through ``gem.make`` / ``gem.make_vec``.
- ``seal_envs.integrations.skyrl``: every ``seal/`` id through ``skyrl_gym.make`` (per-row ``extras``).
- ``seal_envs.integrations.openenv``: ``create_app`` (OpenEnv's protocol; ``seal serve``) and a client.
- ``seal_envs.integrations.verl``: the agent loop ``seal_agent`` and SEAL's per-token weights.
- ``seal_envs.integrations.openrlhf``: ``AgentInstance`` / ``AgentExecutor`` for ``--agent_func_path``.
- ``seal_envs.integrations.verifiers``: a verifiers v1 Env and Taskset per ``seal/`` id.

Shared by all of them: :mod:`~seal_envs.integrations.common` (the task a dataset row asks for,
the final-info record), :mod:`~seal_envs.integrations.episode` (one episode driven one generation
at a time, for the token-level loops) and :mod:`~seal_envs.integrations.channel`
(``SurfaceChannel``: one owner publishes the training surface, every worker in any process shows
the newest one at reset). docs/frameworks.md has the wiring per framework.
"""

from seal_envs.integrations.channel import LatestSurface, SurfaceChannel
from seal_envs.integrations.common import final_record, make_env, reset_arguments, task_row

__all__ = ["LatestSurface", "SurfaceChannel", "final_record", "make_env", "reset_arguments", "task_row"]
