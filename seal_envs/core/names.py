"""Shared pools of everyday values (people, places, items) for the task generators.

Names are common words split into few, frequent tokens, so a small model that learned to
copy values from the instruction can copy these too (DESIGN: held-out values must stay
copyable, or an ood score measures the tokenizer).
"""

from __future__ import annotations

import random

FIRST = ("Alice", "Bob", "Carol", "David", "Emma", "Frank", "Grace", "Henry", "Ivy", "Jack",
         "Karen", "Leo", "Mia", "Noah", "Olivia", "Paul", "Quinn", "Rosa", "Sam", "Tina")
LAST = ("Smith", "Jones", "Brown", "Lee", "Garcia", "Miller", "Davis", "Wilson", "Moore", "Taylor",
        "Clark", "Hall", "Young", "King", "Wright", "Lopez", "Hill", "Green", "Adams", "Baker")
CITIES = ("Paris", "London", "Berlin", "Madrid", "Rome", "Tokyo", "Boston", "Denver", "Austin",
          "Dublin", "Oslo", "Lisbon", "Vienna", "Prague", "Seattle", "Chicago")
WORDS = ("apple", "river", "stone", "cloud", "maple", "tiger", "lemon", "ocean", "amber", "cedar",
         "delta", "ember", "frost", "grove", "harbor", "island", "jade", "lotus", "meadow", "north")


def person_names(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct full names."""
    names: list[str] = []  # a list, not a set: set order follows the per-process string hash
    while len(names) < n:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name not in names:
            names.append(name)
    return names


def pick_distinct(rng: random.Random, pool: tuple[str, ...] | list[str], n: int) -> list[str]:
    return rng.sample(list(pool), n)
