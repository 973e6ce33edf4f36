"""The native domains. Each is a folder with a backend (tools and policies) and a generator.

To add one: write ``backend.py`` and ``generator.py`` as ``bank/`` does, add the generator
below, and run ``seal_envs.testing.check_domain`` on it.
"""

from __future__ import annotations

import importlib

from seal_envs.core.generator import DomainGenerator

_TRAIN = ("bank", "shop", "files", "travel", "calendar")
_OOD = ("smarthome",)


def _load() -> dict[str, DomainGenerator]:
    gens: dict[str, DomainGenerator] = {}
    for name in _TRAIN + _OOD:
        try:
            module = importlib.import_module(f"seal_envs.domains.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"seal_envs.domains.{name}":
                raise
            continue
        gens[name] = module.GENERATOR
    return gens


GENERATORS: dict[str, DomainGenerator] = _load()
TRAIN_DOMAINS: tuple[str, ...] = tuple(d for d in _TRAIN if d in GENERATORS)
OOD_DOMAINS: tuple[str, ...] = tuple(d for d in _OOD if d in GENERATORS)

__all__ = ["GENERATORS", "TRAIN_DOMAINS", "OOD_DOMAINS"]
