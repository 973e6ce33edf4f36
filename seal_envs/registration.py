"""Every environment id, registered in one place, and the factory of the BFCL ids (the env layer
builds the env over a task source; the source never imports the env)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

ENTRY = "seal_envs.env:ToolUseEnv"
DOMAIN_IDS = {
    "bank": "seal/ToolUse-Bank-v0",
    "shop": "seal/ToolUse-Shop-v0",
    "files": "seal/ToolUse-Files-v0",
    "travel": "seal/ToolUse-Travel-v0",
    "calendar": "seal/ToolUse-Calendar-v0",
    "smarthome": "seal/ToolUse-SmartHome-v0",
}
BFCL_ENTRY = "seal_envs.registration:make_bfcl_env"
# Outside any TimeLimit that gym.make adds: a truncated episode is still verified and diagnosed.
VERIFY_WRAPPER = WrapperSpec("VerifyOnTruncation", "seal_envs.env:VerifyOnTruncation", {})
BFCL_IDS = {  # registered only when the optional bfcl-eval package is installed
    None: "seal/BFCL-MultiTurn-v0",
    "base": "seal/BFCL-MultiTurn-Base-v0",
    "miss_func": "seal/BFCL-MultiTurn-MissFunc-v0",
    "miss_param": "seal/BFCL-MultiTurn-MissParam-v0",
    "long_context": "seal/BFCL-MultiTurn-LongContext-v0",
}


def make_bfcl_env(split: str = "train", categories: Any = None, irrelevance: Any = ("miss_func",),
                  max_steps: int | None = None, split_source: str = "seal_400", **kwargs: Any):
    """A ``ToolUseEnv`` over BFCL tasks: the entry point of the ``seal/BFCL-MultiTurn-*`` ids.

    It lives here, in the env layer, so that ``seal_envs.bfcl`` stays a task source that imports
    only ``core``: the env asks the source, never the other way round. ``categories`` defaults
    to all four and ``max_steps`` to ``seal_envs.bfcl.source.DEFAULT_MAX_STEPS``."""
    from seal_envs.bfcl import loader
    from seal_envs.bfcl.source import DEFAULT_MAX_STEPS, BFCLTaskSet
    from seal_envs.env import ToolUseEnv

    categories = loader.CATEGORIES if categories is None else categories
    if isinstance(categories, str):
        categories = (categories,)
    return ToolUseEnv(task_set=BFCLTaskSet(split, tuple(categories), tuple(irrelevance), split_source),
                      max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps, **kwargs)


def registered_ids() -> list[str]:
    return sorted(i for i in gym.registry if i.startswith("seal/"))


def register_all() -> None:
    from seal_envs.bfcl.loader import available as bfcl_available
    from seal_envs.domains import GENERATORS

    def reg(env_id: str, entry_point: str = ENTRY, **kwargs) -> None:
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, kwargs=kwargs, disable_env_checker=False,
                         additional_wrappers=(VERIFY_WRAPPER,))

    reg("seal/ToolUse-v0")
    reg("seal/ToolUse-OOD-v0", split="ood")
    for domain, env_id in DOMAIN_IDS.items():
        if domain in GENERATORS:
            reg(env_id, domains=(domain,))
    if bfcl_available():
        for category, env_id in BFCL_IDS.items():
            reg(env_id, BFCL_ENTRY, **({} if category is None else {"categories": (category,)}))
