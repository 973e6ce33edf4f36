"""SEAL trainer side: diagnosis-guided GRPO on top of TRL.

Importing ``seal_trl`` must stay cheap and must not pull in torch, transformers or trl: the CLI
imports it for every command, including ones that never train. Public names are resolved lazily
through the module-level ``__getattr__`` below, so the heavy import happens on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "OFFICIAL_TAG_WEIGHTS",
    "EMATagWeights",
    "EpisodeResult",
    "Generation",
    "MultiTurnRollout",
    "SEALConfig",
    "SEALGRPOTrainer",
    "TokenWeigher",
    "budget_normalize",
    "build_tiny_model",
    "build_tiny_tokenizer",
    "env_reward",
    "load_model_and_tokenizer",
    "make_dataset",
    "make_rollout_func",
    "renormalize_mean_one",
    "token_weights",
    "trajectory_scale",
    "step_weights",
]

# public name -> submodule that defines it
_LAZY: dict[str, str] = {
    "SEALConfig": "training.config",
    "SEALGRPOTrainer": "training.trainer",
    "MultiTurnRollout": "play.rollout",
    "EpisodeResult": "play.rollout",
    "Generation": "play.generate_fn",
    "make_dataset": "play.data",
    "make_rollout_func": "play.data",
    "env_reward": "play.data",
    "TokenWeigher": "weighting.token_weigher",
    "build_tiny_model": "agent.tiny",
    "build_tiny_tokenizer": "agent.tiny",
    "load_model_and_tokenizer": "agent.tiny",
    "OFFICIAL_TAG_WEIGHTS": "weighting.advantage_weights",
    "EMATagWeights": "weighting.advantage_weights",
    "budget_normalize": "weighting.advantage_weights",
    "renormalize_mean_one": "weighting.advantage_weights",
    "token_weights": "weighting.advantage_weights",
    "trajectory_scale": "weighting.advantage_weights",
    "step_weights": "weighting.advantage_weights",
}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
