"""SEAL's environments inside other RL frameworks.

Import the adapter of your framework; each imports its framework, and only it, when imported,
so ``import seal_envs`` (and this package) stay light:

- ``seal_envs.integrations.verl``: the agent loop ``seal_agent`` and SEAL's per-token weights.
- ``seal_envs.integrations.openrlhf``: ``AgentInstance`` / ``AgentExecutor`` for ``--agent_func_path``.
- ``seal_envs.integrations.verifiers``: a verifiers v1 Env and Taskset per ``seal/`` id.

:mod:`~seal_envs.integrations.episode` is what they share: one episode driven one generation at
a time. docs/frameworks-28b.md has the wiring per framework.
"""
