"""The native domains. Each is a folder with a backend (tools and policies) and a generator.

To add one: write ``backend.py`` and ``generator.py`` as ``bank/`` does, add the generator
below, and run ``seal_envs.testing.check_domain`` on it.
"""

from __future__ import annotations

from seal_envs.core.generator import DomainGenerator

from .bank import BankGenerator

GENERATORS: dict[str, DomainGenerator] = {g.domain: g for g in (BankGenerator(),)}

TRAIN_DOMAINS: tuple[str, ...] = tuple(d for d in ("bank", "shop", "files", "travel", "calendar") if d in GENERATORS)
OOD_DOMAINS: tuple[str, ...] = tuple(d for d in ("smarthome",) if d in GENERATORS)

__all__ = ["GENERATORS", "TRAIN_DOMAINS", "OOD_DOMAINS"]
