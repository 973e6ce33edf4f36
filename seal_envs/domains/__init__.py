"""The native domains. Each is a folder with a backend (tools and policies) and a generator.

To add one: write ``backend.py`` and ``generator.py`` as ``bank/`` does, add its generator here,
and run the checks of :mod:`seal_envs.testing` on its id (``docs/domains.md``).
"""

from __future__ import annotations

from seal_envs.core.generator import DomainGenerator

from . import bank, calendar, files, shop, smarthome, travel

GENERATORS: dict[str, DomainGenerator] = {
    m.GENERATOR.domain: m.GENERATOR for m in (bank, shop, files, travel, calendar, smarthome)
}
TRAIN_DOMAINS: tuple[str, ...] = ("bank", "shop", "files", "travel", "calendar")
OOD_DOMAINS: tuple[str, ...] = ("smarthome",)

__all__ = ["GENERATORS", "TRAIN_DOMAINS", "OOD_DOMAINS"]
