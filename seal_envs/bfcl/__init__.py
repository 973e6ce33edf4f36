"""BFCL v4 multi-turn (base, miss_func, miss_param, long_context: 800 entries) behind the env API.

Needs the optional ``bfcl-eval`` package, installed without its heavy dependency list:
``pip install --no-deps bfcl-eval==2026.3.23 mpmath`` (see ``docs/bfcl.md``). State lives in
bfcl-eval's own API classes, fresh per episode; the agent's calls (JSON, Hermes, OpenAI, or
BFCL's Python syntax read with ``ast``) are dispatched to whitelisted methods, never evaluated.

>>> import gymnasium as gym, seal_envs
>>> env = gym.make("seal/BFCL-MultiTurn-v0", split="test")  # doctest: +SKIP

This package is a task source (``BFCLTaskSet``) and a backend; it imports nothing above
``seal_envs.core``. The env over it is built by ``seal_envs.registration.make_bfcl_env``.
"""

from .loader import CATEGORIES, available

__all__ = ["BFCLBackend", "BFCLTaskSet", "CATEGORIES", "available", "build_task"]


def __getattr__(name: str):  # the heavy parts load on first use, so ``import seal_envs`` stays light
    if name in ("BFCLTaskSet", "build_task"):
        from . import source

        return getattr(source, name)
    if name == "BFCLBackend":
        from .backend import BFCLBackend

        return BFCLBackend
    raise AttributeError(f"module 'seal_envs.bfcl' has no attribute {name!r}")
