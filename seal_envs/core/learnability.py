"""Learnability: how much a surface's hints help a task, the curriculum's second sampling mode.

Why: GRPO learns only from groups whose rewards differ, and a surface patch is a hint. A task the
agent passes with the hints and fails without them is one it almost has: the frontier. Sampled
success under the hinted (evolved or preset) surface minus sampled success under the canonical
one, per task, measures that; :func:`learnability_weights` turns it into sampling weights.

Pure functions of pass counts, so every rank that merged the same counts samples alike. A task
seen on only one of the two surfaces takes its (domain, difficulty) bucket's learnability: with a
few hundred tasks and a few per update, most tasks are seen once or not at all in a short run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

__all__ = ["PassCounts", "learnability", "learnability_weights"]


class PassCounts(NamedTuple):
    """Episodes played and passed, on the canonical surface and on a hinted one."""

    canonical_n: int = 0
    canonical_pass: int = 0
    hinted_n: int = 0
    hinted_pass: int = 0

    def __add__(self, other: "PassCounts") -> "PassCounts":  # type: ignore[override]
        return PassCounts(*(a + b for a, b in zip(self, other)))


def learnability(counts: PassCounts) -> float | None:
    """Hinted success minus canonical success, in [-1, 1]; None until both were played."""
    if counts.canonical_n == 0 or counts.hinted_n == 0:
        return None
    return counts.hinted_pass / counts.hinted_n - counts.canonical_pass / counts.canonical_n


def learnability_weights(tasks: Sequence[tuple[str, str, int]], counts: Mapping[str, PassCounts],
                         floor: float) -> list[float]:
    """A sampling weight per task ``(task_id, domain, difficulty)``: ``floor + max(0, L)`` for its
    learnability ``L`` (the task's own, else its bucket's), 1 where neither is known yet, so that
    unseen tasks are tried before known ones are ranked."""
    buckets: dict[tuple[str, int], PassCounts] = {}
    for task_id, domain, difficulty in tasks:
        if task_id in counts:
            buckets[(domain, difficulty)] = buckets.get((domain, difficulty), PassCounts()) + counts[task_id]
    weights = []
    for task_id, domain, difficulty in tasks:
        value = learnability(counts.get(task_id, PassCounts()))
        if value is None:
            value = learnability(buckets.get((domain, difficulty), PassCounts()))
        weights.append(1.0 if value is None else floor + max(0.0, value))
    return weights
