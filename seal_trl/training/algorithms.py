"""RL algorithms as named settings of one trainer, and advantage functions a user can add.

The algorithms people compare on an evolving environment differ in two places: how a group's
rewards become advantages, and how token losses are normalised. TRL's GRPO loop already has the
rest (rollout, KL, clipping), so an algorithm here is a set of ``SEALConfig`` fields, and when
its advantage is not one TRL computes, a function ``rewards [groups, G] -> advantages [groups, G]``
named by ``SEALConfig.advantage_fn``: a name in :data:`ADVANTAGES` or ``"module:function"``.

With one optimisation pass per batch (``num_iterations=1``) the clipped ratio is 1, so GRPO's
surrogate has the REINFORCE gradient: ``reinforce`` below is the loop of
``docs/other_algorithms.md`` (per-episode mean of log-probabilities times reward minus the group
mean), run by the same trainer.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["ADVANTAGES", "ALGORITHMS", "LOSS_TYPES", "leave_one_out", "mean_baseline", "resolve_advantage_fn"]


#: TRL's loss normalisations that ``SEALConfig`` accepts: the token-level ones, where SEAL's
#: ``[B, T]`` advantages enter TRL's clipped surrogate unchanged (TRL's sequence-level losses,
#: ``luspo`` and ``vespo``, reduce the ratio per sequence before the advantage applies).
LOSS_TYPES = ("grpo", "dapo", "dr_grpo", "bnpo")


def leave_one_out(rewards: Any) -> Any:
    """RLOO (Ahmadian et al., arXiv 2402.14740): each episode's reward minus the mean of the other
    ``G - 1`` of its group, so its baseline does not depend on its own sample."""
    g = rewards.shape[1]
    if g < 2:
        raise ValueError(f"leave-one-out needs groups of at least 2 episodes, got {g}")
    return (rewards * g - rewards.sum(dim=1, keepdim=True)) / (g - 1)


def mean_baseline(rewards: Any) -> Any:
    """REINFORCE with the group mean as baseline (no division by the group's standard deviation)."""
    return rewards - rewards.mean(dim=1, keepdim=True)


#: Advantage functions by name; ``advantage_fn="module:function"`` reaches any other.
ADVANTAGES: dict[str, Callable[[Any], Any]] = {"rloo": leave_one_out, "reinforce": mean_baseline}

#: Each algorithm of the matrix (issue 31) as the ``SEALConfig`` fields it sets on top of
#: ``seal train``'s recipe; everything else (KL, temperature, sample budget) stays the recipe's.
ALGORITHMS: dict[str, dict[str, Any]] = {
    "grpo": {"loss_type": "grpo", "scale_rewards": "group", "weighting": "none"},
    "dr_grpo": {"loss_type": "dr_grpo", "scale_rewards": "none", "weighting": "none"},
    "dapo": {"loss_type": "dapo", "scale_rewards": "group", "weighting": "none"},
    "rloo": {"loss_type": "grpo", "advantage_fn": "rloo", "weighting": "none"},
    "reinforce": {"loss_type": "grpo", "advantage_fn": "reinforce", "weighting": "none"},
    "seal_step": {"loss_type": "dapo", "scale_rewards": "group", "weighting": "step"},
    "seal_apatch": {"loss_type": "dapo", "scale_rewards": "group", "weighting": "trajectory"},
}


def resolve_advantage_fn(spec: str) -> Callable[[Any], Any]:
    """The function ``spec`` names: a key of :data:`ADVANTAGES` or ``"package.module:function"``."""
    if spec in ADVANTAGES:
        return ADVANTAGES[spec]
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"advantage_fn must be one of {sorted(ADVANTAGES)} or 'module:function', got {spec!r}")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"advantage_fn {spec!r}: {e}") from None
    if not callable(fn):
        raise ValueError(f"advantage_fn {spec!r} is not callable")
    return fn
