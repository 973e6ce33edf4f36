"""The six arms of the study, as ``SEALConfig`` overrides on one shared base.

Only these fields differ between arms; the warm start, seeds, tasks, sample budget and every other
GRPO setting are shared. One asymmetry is the library's: with ``curriculum=True`` a row passes only
its seed and, once the evolver has statistics, the env samples the task from its whole task set by
curriculum weights, so ``seal_curriculum`` can train on tasks outside ``RLConfig.difficulties``.
"""

from __future__ import annotations

ARMS: dict[str, dict] = {
    "grpo": {"weighting": "none", "evolution": False, "curriculum": False},
    "step": {"weighting": "step", "evolution": False, "curriculum": False},
    "apatch": {"weighting": "trajectory", "evolution": False, "curriculum": False},
    "evolution": {"weighting": "none", "evolution": True, "curriculum": False},
    "seal": {"weighting": "step", "evolution": True, "curriculum": False},
    "seal_curriculum": {"weighting": "step", "evolution": True, "curriculum": True},
}

DESCRIPTIONS: dict[str, str] = {
    "grpo": "stock GRPO (weighting none, canonical surface)",
    "step": "+ step reweighting (`weighting=step`)",
    "apatch": "+ official A-Patch (`weighting=trajectory`)",
    "evolution": "+ env evolution (surface patches, no reweighting)",
    "seal": "full SEAL (step reweighting + evolution)",
    "seal_curriculum": "full SEAL + curriculum",
}


def arm_overrides(name: str) -> dict:
    if name not in ARMS:
        raise ValueError(f"unknown arm {name!r}; known: {list(ARMS)}")
    return dict(ARMS[name])
