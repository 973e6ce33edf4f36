"""The verifiers environment of SEAL-Gym under the top-level name verifiers loads environments
by (``vf-eval seal-verifiers``): one Env, one Taskset and one Harness, from
:mod:`seal_envs.integrations.verifiers`."""

from seal_envs.integrations.verifiers import SealEnv, SealHarness, SealTaskset

__all__ = ["SealEnv", "SealHarness", "SealTaskset"]
