"""Fixed, seeded task sets: which task sits at each index of a split.

``train`` holds exactly 400 tasks (the SEAL paper's budget), ``test`` 200 held-out seeds of the
same domains, ``ood`` 200 tasks from held-out domains and held-out phrasings. The domain and
difficulty of an index follow from the index alone, so sampling by domain or difficulty never
needs to generate the tasks it skips.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from seal_envs.core.backend import Backend
from seal_envs.core.generator import DIFFICULTIES, SPLITS
from seal_envs.core.source import Slot
from seal_envs.core.types import Task, Verdict
from seal_envs.core.verifier import EpisodeRecord, verify
from seal_envs.domains import GENERATORS, OOD_DOMAINS, TRAIN_DOMAINS

SPLIT_SIZES = {"train": 400, "test": 200, "ood": 200}
SEED_OFFSET = {"train": 0, "test": 100_000, "ood": 200_000}


@dataclass(frozen=True)
class TaskSet:
    """The tasks of one split for a tuple of domains (``held_out`` joins only the ood split):
    a :class:`~seal_envs.core.source.TaskSource` whose tasks a seeded generator makes."""

    domains: tuple[str, ...]
    split: str
    held_out: tuple[str, ...] = ()
    generated: ClassVar[bool] = True

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

    def task_id(self, index: int) -> str:
        """The id of task ``index`` without generating it (the curriculum weighs every index)."""
        s = self.slot(index)
        return f"{s.domain}/{self.split}/d{s.difficulty}/{s.seed}"

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
    """Regenerate a task from its id ``domain/split/dN/seed``, spelled exactly as ``Task.task_id``
    spells it: a short or padded form (``bank/train/3/2``, ``d03``) is refused with the exact id
    to use, so that every id a user types round-trips and names one task only."""
    form = "ids are domain/split/dN/seed, e.g. bank/test/d2/100145"
    parts = task_id.split("/") if isinstance(task_id, str) else []
    try:
        domain, split, diff, seed = parts
        diff, seed = int(diff.strip().removeprefix("d")), int(seed)
    except ValueError:
        raise ValueError(f"not a task id: {task_id!r} ({form})") from None
    domain, split = domain.strip(), split.strip()
    if domain not in GENERATORS:
        raise ValueError(f"unknown domain {domain!r} in task id {task_id!r}; domains: {', '.join(sorted(GENERATORS))}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r} in task id {task_id!r}; splits: {', '.join(SPLITS)}")
    if diff not in DIFFICULTIES:
        raise ValueError(f"difficulty d{diff} in task id {task_id!r} is not one of "
                         f"{', '.join(f'd{d}' for d in DIFFICULTIES)}")
    canonical = f"{domain}/{split}/d{diff}/{seed}"
    if canonical != task_id:
        raise ValueError(f"not a task id: {task_id!r} ({form}); did you mean {canonical}?")
    task = generate(domain, seed, diff, split)
    assert task.task_id == task_id, (task.task_id, task_id)  # only canonical spellings get here
    return task


def default_task_set(split: str, domains: tuple[str, ...] | None = None) -> TaskSet:
    """The mixture over training domains, with held-out domains joining ``ood``."""
    if domains is None:
        return TaskSet(TRAIN_DOMAINS, split, OOD_DOMAINS)
    return TaskSet(tuple(domains), split)


#: Seeds of fresh train-phrasing tasks: beyond every split (train 0-399, test 100_000+, ood
#: 200_000+) and beyond the warm start's extra tasks (10_000+), so that RL can play tasks that no
#: supervised step has seen. An SFT warm start has memorised its own tasks; RL on those sharpens
#: recall, RL on unseen ones trains the skill the held-out evaluation measures.
FRESH_SEED = 300_000


def held_out_requests(domains: tuple[str, ...] | None = None) -> frozenset[str]:
    """The opening request of every test and ood task: a generated task that repeats one is not
    independent of the evaluation and is left out of training data."""
    held: set[str] = set()
    for split in ("test", "ood"):
        ts = default_task_set(split, domains)
        held |= {ts[i].turns[0].message for i in range(len(ts))}
    return frozenset(held)


def fresh_tasks(count: int, domains: tuple[str, ...] | None = None,
                difficulties: tuple[int, ...] = DIFFICULTIES, start: int = FRESH_SEED) -> list[Task]:
    """Train-phrasing tasks of seeds ``start .. start + count - 1``, cycling the train domains and
    ``difficulties`` as a split does; tasks whose request repeats a test or ood request are left
    out, so fewer than ``count`` may come back."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if not difficulties or any(d not in DIFFICULTIES for d in difficulties):
        raise ValueError(f"difficulties must be a non-empty subset of {DIFFICULTIES}, got {difficulties}")
    pool = default_task_set("train", domains).domains
    held = held_out_requests(domains)
    out = []
    for k in range(count):
        task = generate(pool[k % len(pool)], start + k, difficulties[(k // len(pool)) % len(difficulties)], "train")
        if task.turns[0].message not in held:
            out.append(task)
    return out
