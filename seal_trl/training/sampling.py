"""Which tasks a GRPO batch spends its episodes on: only groups with mixed rewards carry a gradient.

A GRPO group of ``G`` episodes of one task whose rewards are all equal has advantage 0 on every
token. At this project's scale that is most groups (measured on the bank warm start at T = 1.0:
88% of groups), so an update learns from one task or none. Two published remedies, combined:

* **online filtering** (Bae et al., arXiv 2504.03380): remember each task's last group; a task
  whose last group was uniform is skipped for ``cooldown`` steps, replaced before any episode is
  spent on it by a task that was mixed or has not been seen;
* **dynamic sampling** (DAPO, arXiv 2503.14476): after a batch is played, groups that still came
  out uniform are replaced by fresh tasks and replayed, up to ``rounds`` times.

Everything here is pure bookkeeping (no torch): :class:`TaskMemory` records outcomes and picks
replacements deterministically from its seed and the step, so every run with the same seed picks
the same tasks.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = ["GroupRecord", "TaskMemory", "group_slices", "is_uniform"]


def is_uniform(rewards: Sequence[float], tol: float = 1e-9) -> bool:
    """True when every reward of a group is the same, so GRPO gives it no gradient."""
    return not rewards or max(rewards) - min(rewards) <= tol


def group_slices(keys: Sequence[Hashable], group_size: int) -> list[slice] | None:
    """The GRPO groups of a batch as slices of ``group_size`` consecutive rows with one task key,
    or ``None`` when the batch is not laid out that way (then nothing may be replaced)."""
    if group_size < 1 or len(keys) % group_size:
        return None
    slices = [slice(i, i + group_size) for i in range(0, len(keys), group_size)]
    if any(len(set(keys[s])) != 1 for s in slices):
        return None
    return slices


@dataclass(frozen=True)
class GroupRecord:
    step: int
    mean: float
    uniform: bool


class TaskMemory:
    """The last group outcome of every task played, and the replacements it suggests.

    ``pool`` lists every task key that may be drawn (a dataset's rows). :meth:`replacements`
    draws keys not in ``exclude``: first tasks whose last group was mixed, then tasks never seen,
    then tasks whose uniform record is older than ``cooldown`` steps; never a task that came out
    uniform within ``cooldown`` steps, unless nothing else is left.
    """

    def __init__(self, pool: Sequence[Hashable], *, cooldown: int = 8, seed: int = 0) -> None:
        if cooldown < 0:
            raise ValueError(f"cooldown must be >= 0, got {cooldown}")
        self.pool = list(dict.fromkeys(pool))
        self.cooldown = cooldown
        self.seed = seed
        self.records: dict[Hashable, GroupRecord] = {}

    def record(self, key: Hashable, rewards: Sequence[float], step: int) -> None:
        self.records[key] = GroupRecord(step, sum(rewards) / max(len(rewards), 1), is_uniform(rewards))

    def cooling(self, key: Hashable, step: int) -> bool:
        """Whether ``key`` came out uniform within the last ``cooldown`` steps."""
        rec = self.records.get(key)
        return rec is not None and rec.uniform and step - rec.step < self.cooldown

    def replacements(self, count: int, step: int, exclude: set[Hashable] = frozenset(), salt: int = 0) -> list:
        """``count`` distinct keys to play instead of cooling ones (fewer if the pool runs out)."""
        rng = random.Random(f"{self.seed}:{step}:{salt}")
        order = self.pool[:]
        rng.shuffle(order)

        def rank(key: Hashable) -> int:
            rec = self.records.get(key)
            if rec is None:
                return 1
            if not rec.uniform:
                return 0
            return 2 if step - rec.step >= self.cooldown else 3

        free = sorted((k for k in order if k not in exclude), key=rank)  # stable: shuffled within a rank
        return free[:count]

    def stats(self) -> dict[str, float]:
        seen = len(self.records)
        mixed = sum(not r.uniform for r in self.records.values())
        passing = sum(r.uniform and r.mean > 0 for r in self.records.values())
        return {"tasks_seen": float(seen), "tasks_mixed": float(mixed), "tasks_uniform_pass": float(passing),
                "tasks_uniform_fail": float(seen - mixed - passing)}

    def state_dict(self) -> dict:
        return {"records": [[k, r.step, r.mean, r.uniform] for k, r in self.records.items()]}

    def load_state_dict(self, state: dict) -> None:
        self.records = {k: GroupRecord(int(s), float(m), bool(u)) for k, s, m, u in state["records"]}
