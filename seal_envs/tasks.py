"""Fixed, seeded task sets: which task sits at each index of a split.

``train`` holds exactly 400 tasks (the SEAL paper's budget), ``test`` 200 held-out seeds of the
same domains, ``ood`` 200 tasks from held-out domains and held-out phrasings. The domain and
difficulty of an index follow from the index alone, so sampling by domain or difficulty never
needs to generate the tasks it skips.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from seal_envs.core.backend import Backend
from seal_envs.core.generator import SPLITS
from seal_envs.core.types import Task, Verdict
from seal_envs.core.verifier import EpisodeRecord, verify
from seal_envs.domains import GENERATORS, OOD_DOMAINS, TRAIN_DOMAINS

SPLIT_SIZES = {"train": 400, "test": 200, "ood": 200}
SEED_OFFSET = {"train": 0, "test": 100_000, "ood": 200_000}


@dataclass(frozen=True)
class Slot:
    domain: str
    difficulty: int
    seed: int


@dataclass(frozen=True)
class TaskSet:
    """The tasks of one split for a tuple of domains (``held_out`` joins only the ood split)."""

    domains: tuple[str, ...]
    split: str
    held_out: tuple[str, ...] = ()

    def __post_init__(self):
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")
        unknown = [d for d in self.domains + self.held_out if d not in GENERATORS]
        if unknown:
            raise ValueError(f"unknown domain(s) {unknown}; known: {sorted(GENERATORS)}")
        if not self.domains:
            raise ValueError("a task set needs at least one domain")

    def __len__(self) -> int:
        return SPLIT_SIZES[self.split]

    def slot(self, index: int) -> Slot:
        if not 0 <= index < len(self):
            raise IndexError(f"{self.split} has {len(self)} tasks, index {index} is out of range")
        pool = self.domains
        j = index
        if self.split == "ood" and self.held_out:
            pool, j = (self.held_out, index // 2) if index % 2 == 0 else (self.domains, index // 2)
        domain = pool[j % len(pool)]
        difficulty = 1 + (j // len(pool)) % 4
        return Slot(domain, difficulty, SEED_OFFSET[self.split] + index)

    def __getitem__(self, index: int) -> Task:
        s = self.slot(index)
        return generate(s.domain, s.seed, s.difficulty, self.split)

    def backend_for(self, task: Task) -> type[Backend]:
        """The service class that runs ``task`` (task sources such as BFCL supply their own)."""
        return GENERATORS[task.domain].backend

    def verify(self, task: Task, record: EpisodeRecord) -> Verdict:
        return verify(task, self.backend_for(task), record)

    def task_from_id(self, task_id: str) -> Task:
        return task_from_id(task_id)

    def with_split(self, split: str) -> "TaskSet":
        return TaskSet(self.domains, split, self.held_out)

    def indices(self, domain: str | None = None, difficulty: int | None = None) -> list[int]:
        return [i for i in range(len(self)) if (domain is None or self.slot(i).domain == domain)
                and (difficulty is None or self.slot(i).difficulty == difficulty)]


@lru_cache(maxsize=4096)
def generate(domain: str, seed: int, difficulty: int, split: str) -> Task:
    return GENERATORS[domain].generate(seed, difficulty, split)


def task_from_id(task_id: str) -> Task:
    """Regenerate a task from its id ``domain/split/dN/seed``."""
    try:
        domain, split, diff, seed = task_id.split("/")
        return generate(domain, int(seed), int(diff.lstrip("d")), split)
    except (ValueError, KeyError) as e:
        raise ValueError(f"not a task id of the form domain/split/dN/seed with a known domain: {task_id!r}") from e


def default_task_set(split: str, domains: tuple[str, ...] | None = None) -> TaskSet:
    """The mixture over training domains, with held-out domains joining ``ood``."""
    if domains is None:
        return TaskSet(TRAIN_DOMAINS, split, OOD_DOMAINS)
    return TaskSet(tuple(domains), split)
