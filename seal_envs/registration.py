"""Every environment id, registered in one place."""

from __future__ import annotations

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
BFCL_ENTRY = "seal_envs.bfcl.source:make_env"
# Outside any TimeLimit that gym.make adds: a truncated episode is still verified and diagnosed.
VERIFY_WRAPPER = WrapperSpec("VerifyOnTruncation", "seal_envs.env:VerifyOnTruncation", {})
BFCL_IDS = {  # registered only when the optional bfcl-eval package is installed
    None: "seal/BFCL-MultiTurn-v0",
    "base": "seal/BFCL-MultiTurn-Base-v0",
    "miss_func": "seal/BFCL-MultiTurn-MissFunc-v0",
    "miss_param": "seal/BFCL-MultiTurn-MissParam-v0",
    "long_context": "seal/BFCL-MultiTurn-LongContext-v0",
}


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
