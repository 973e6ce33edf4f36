"""``BFCLTaskSet``: the 800 BFCL v4 multi-turn entries as a task source for ``ToolUseEnv``.

Splits: ``split_source="seal_400"`` (default) gives the ``train`` and ``test`` ids of the paper
repository's split file (400 each, 100 per category, seed 0); ``split_source="seal_run"`` the ids
the paper's run trains and validates on (``train`` 400, ``val`` 100, ``test`` 300; see
:func:`seal_envs.bfcl.loader.paper_split`); ``all`` is every entry. ``categories`` narrows a
split to some of base, miss_func, miss_param and long_context. Within a split the order is by
category, then by entry number.

Each entry becomes a :class:`~seal_envs.core.types.Task`: ``task_id`` is the BFCL id, ``domain``
is ``bfcl_<category>``, ``seed`` the entry number, ``difficulty`` 1 to 4 from the number of
ground-truth calls, ``split`` the paper split the id belongs to, and each user turn carries its
ground-truth calls as the reference plan. A miss_func entry hides its held-out functions
(``Task.hidden_tools``) until their turn (``UserTurn.new_tools``), whose user message is
bfcl-eval's own: the new functions' docs, then "I have updated some more functions you can
choose from. What about now?".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from seal_envs.core.source import Slot
from seal_envs.core.types import Task, UserTurn, Verdict
from seal_envs.core.verifier import EpisodeRecord

from . import loader
from .backend import BFCLBackend, signatures_for, specs_for
from .checker import Reference, check, reference
from .parse import parse_calls

SPLITS = ("train", "val", "test", "all")
# bfcl-eval's DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC (constants/default_prompts.py)
REVEAL_PROMPT = "I have updated some more functions you can choose from. What about now?"
# Entries whose ground truth cannot pass here, with the reason (docs/bfcl.md lists them too).
KNOWN_FAILURES = {
    "multi_turn_miss_func_49": "the ground truth calls tail in turn 1, but tail is held out until turn 3 "
                               "(missed_function); bfcl-eval runs it anyway, the env refuses a held-out "
                               "function before its turn",
}
DEFAULT_MAX_STEPS = 60  # every ground truth fits (the longest needs 37 actions); BFCL allows 20 per turn


def difficulty_of(n_calls: int) -> int:
    """1 to 4 by the number of ground-truth calls (about the quartiles over the 800 entries)."""
    return 1 if n_calls <= 4 else 2 if n_calls <= 6 else 3 if n_calls <= 8 else 4


def _reveal_message(classes: list[str], names: list[str]) -> str:
    specs = specs_for(classes)
    docs = "\n".join(json.dumps(specs[n].to_openai(), ensure_ascii=False) for n in names)
    return f"{docs}\n{REVEAL_PROMPT}"


@lru_cache(maxsize=None)
def _split_of() -> dict[str, str]:
    return {i: split for split, ids in loader.paper_split().items() for i in ids}


@lru_cache(maxsize=None)
def build_task(entry_id: str) -> Task:
    """The task of one BFCL entry (cached: tasks are immutable values)."""
    entry = loader.entry_index().get(entry_id)
    if entry is None:
        raise ValueError(f"no BFCL v4 multi-turn entry {entry_id!r} (ids look like multi_turn_base_0)")
    category = loader.category_of(entry_id)
    classes = list(entry["involved_classes"])
    signatures = signatures_for(classes)
    missed: dict[str, list[str]] = entry.get("missed_function", {})
    turns = []
    for i, (messages, gt) in enumerate(zip(entry["question"], loader.ground_truth(category)[entry_id], strict=True)):
        new = missed.get(str(i), [])
        text = "\n".join(m["content"] for m in messages if m["role"] == "user")
        turns.append(UserTurn(text or _reveal_message(classes, new), parse_calls(gt, signatures), new_tools=tuple(new)))
    n_calls = sum(len(t.plan) for t in turns)
    return Task(
        task_id=entry_id, domain=f"bfcl_{category}", split=_split_of().get(entry_id, "all"),
        seed=int(entry_id.rsplit("_", 1)[1]), difficulty=difficulty_of(n_calls),
        initial_state={"initial_config": entry["initial_config"], "involved_classes": classes,
                       "long_context": category == "long_context"},
        turns=tuple(turns), template=category,
        hidden_tools=tuple(n for names in missed.values() for n in names),
    )


@lru_cache(maxsize=None)
def _stock_reference(entry_id: str) -> Reference:
    return reference(build_task(entry_id))


@lru_cache(maxsize=None)
def _ids(split: str, categories: tuple[str, ...], source: str = "seal_400") -> tuple[str, ...]:
    pool = set(loader.entry_index()) if split == "all" else set(loader.paper_split(source)[split])
    return tuple(e["id"] for c in categories for e in loader.entries(c) if e["id"] in pool)


@dataclass(frozen=True)
class BFCLTaskSet:
    """BFCL v4 multi-turn entries of one split, a :class:`~seal_envs.core.source.TaskSource`
    over a fixed list (``generated`` is False: there are no fresh tasks to draw). ``irrelevance``
    names the categories whose empty ground-truth turns must hold no call (see
    :mod:`seal_envs.bfcl.checker`)."""

    split: str = "train"
    categories: tuple[str, ...] = loader.CATEGORIES
    irrelevance: tuple[str, ...] = ("miss_func",)
    split_source: str = "seal_400"
    generated: ClassVar[bool] = False
    held_out: ClassVar[tuple[str, ...]] = ()  # no domain is kept for ood only

    def __post_init__(self):
        parts = ("all", *loader.paper_split(self.split_source))
        if self.split not in parts:
            raise ValueError(f"split must be one of {parts} for split_source={self.split_source!r}, got {self.split!r}")
        object.__setattr__(self, "categories", tuple(self.categories))
        object.__setattr__(self, "irrelevance", tuple(self.irrelevance))
        unknown = [c for c in self.categories + self.irrelevance if c not in loader.CATEGORIES]
        if unknown or not self.categories:
            raise ValueError(f"categories must be a non-empty subset of {loader.CATEGORIES}, got {unknown or '()'}")

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(f"bfcl_{c}" for c in self.categories)

    @property
    def ids(self) -> tuple[str, ...]:
        return _ids(self.split, self.categories, self.split_source)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> Task:
        if not 0 <= index < len(self):
            raise IndexError(f"{self.split} has {len(self)} BFCL tasks, index {index} is out of range")
        return build_task(self.ids[index])

    def slot(self, index: int) -> Slot:
        task = self[index]
        return Slot(task.domain, task.difficulty, task.seed)

    def indices(self, domain: str | None = None, difficulty: int | None = None) -> list[int]:
        if domain in loader.CATEGORIES:
            domain = f"bfcl_{domain}"
        return [i for i in range(len(self)) if (domain is None or self.slot(i).domain == domain)
                and (difficulty is None or self.slot(i).difficulty == difficulty)]

    def backend_for(self, task: Task) -> type[BFCLBackend]:
        return BFCLBackend

    def verify(self, task: Task, record: EpisodeRecord) -> Verdict:
        stock = task.task_id in loader.entry_index() and build_task(task.task_id) == task
        ref = _stock_reference(task.task_id) if stock else reference(task)
        return check(task, record, ref, irrelevance=task.template in self.irrelevance)

    def task_from_id(self, task_id: str) -> Task:
        return build_task(task_id)

    def with_split(self, split: str) -> "BFCLTaskSet":
        return BFCLTaskSet(split, self.categories, self.irrelevance, self.split_source)

