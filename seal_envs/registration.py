"""Every environment id, registered in one place, and the factory of the BFCL ids (the env layer
builds the env over a task source; the source never imports the env)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec

ENTRY = "seal_envs.env:ToolUseEnv"
DOMAIN_IDS = {
    "bank": "seal/ToolUse-Bank-v0",
    "shop": "seal/ToolUse-Shop-v0",
    "files": "seal/ToolUse-Files-v0",
    "travel": "seal/ToolUse-Travel-v0",
    "calendar": "seal/ToolUse-Calendar-v0",
    "smarthome": "seal/ToolUse-SmartHome-v0",
}
BFCL_ENTRY = "seal_envs.registration:make_bfcl_env"
# Outside any TimeLimit that gym.make adds: a truncated episode is still verified and diagnosed.
VERIFY_WRAPPER = WrapperSpec("VerifyOnTruncation", "seal_envs.env:VerifyOnTruncation", {})
BFCL_IDS = {  # registered only when the optional bfcl-eval package is installed
    None: "seal/BFCL-MultiTurn-v0",
    "base": "seal/BFCL-MultiTurn-Base-v0",
    "miss_func": "seal/BFCL-MultiTurn-MissFunc-v0",
    "miss_param": "seal/BFCL-MultiTurn-MissParam-v0",
    "long_context": "seal/BFCL-MultiTurn-LongContext-v0",
}


def make_bfcl_env(split: str = "train", categories: Any = None, irrelevance: Any = ("miss_func",),
                  max_steps: int | None = None, split_source: str = "seal_400", **kwargs: Any):
    """A ``ToolUseEnv`` over BFCL tasks: the entry point of the ``seal/BFCL-MultiTurn-*`` ids.

    It lives here, in the env layer, so that ``seal_envs.bfcl`` stays a task source that imports
    only ``core``: the env asks the source, never the other way round. ``categories`` defaults
    to all four and ``max_steps`` to ``seal_envs.bfcl.source.DEFAULT_MAX_STEPS``."""
    from seal_envs.bfcl import loader
    from seal_envs.bfcl.source import DEFAULT_MAX_STEPS, BFCLTaskSet
    from seal_envs.env import ToolUseEnv

    categories = loader.CATEGORIES if categories is None else categories
    if isinstance(categories, str):
        categories = (categories,)
    return ToolUseEnv(task_set=BFCLTaskSet(split, tuple(categories), tuple(irrelevance), split_source),
                      max_steps=DEFAULT_MAX_STEPS if max_steps is None else max_steps, **kwargs)


MCP_ID = "seal/MCP-v0"
MCP_ENTRY = "seal_envs.registration:make_mcp_env"
#: Ids that need arguments to make (a server and a task file): not in ``registered_ids()``, whose
#: every id ``gym.make`` builds as it is.
PARAMETRIC_IDS = (MCP_ID,)


def make_mcp_env(server: Any = None, tasks: Any = None, split: str = "train", *, call_timeout: float = 10.0,
                 start_timeout: float = 30.0, reset_tool: str | bool | None = None, cwd: str | None = None,
                 server_env: Any = None, max_result_chars: int = 32_768, **kwargs: Any):
    """A ``ToolUseEnv`` over an MCP server (``server``: its argv, e.g. ``["python", "server.py"]``)
    and a task file (``tasks``: JSON Lines or YAML): the entry point of ``seal/MCP-v0``.

    It lives here for the reason ``make_bfcl_env`` does: ``seal_envs.mcp`` imports only ``core``.
    ``env.close()`` stops every server process the env started."""
    if not server or not tasks:
        raise ValueError(f"{MCP_ID} needs server=[argv of an MCP server over stdio] and tasks=<a .jsonl or .yaml "
                         f"task file>, e.g. gym.make({MCP_ID!r}, server=['python', 'server.py'], tasks='tasks.jsonl')")
    from seal_envs.env import ToolUseEnv
    from seal_envs.mcp.source import MCPTaskSource

    source = MCPTaskSource(server, tasks, split, call_timeout=call_timeout, start_timeout=start_timeout,
                           reset_tool=reset_tool, cwd=cwd, env=server_env, max_result_chars=max_result_chars)
    try:
        return ToolUseEnv(task_set=source, **kwargs)
    except BaseException:
        source.close()
        raise


DOMAIN_ENTRY = "seal_envs.registration:make_domain_env"
#: The entry-point group a package names its domains in (``pyproject.toml``:
#: ``[project.entry-points."seal_envs.domains"] notes = "my_pkg.generator:GENERATOR"``).
ENTRY_POINT_GROUP = "seal_envs.domains"


def _import_path(generator: Any) -> str | None:
    """``module:name`` under which a fresh process finds ``generator`` (a module-level object,
    outside ``__main__``), or None: then only this process (and forked workers) know it."""
    import importlib
    import sys

    module = getattr(type(generator), "__module__", None)
    for mod_name in (module, getattr(generator, "__module__", None)):
        mod = sys.modules.get(mod_name or "")
        if mod is None or mod_name == "__main__":
            continue
        for name, value in vars(mod).items():
            if value is generator:
                try:  # the path must import to the same object
                    if getattr(importlib.import_module(mod_name), name) is generator:
                        return f"{mod_name}:{name}"
                except ImportError:
                    return None
    return None


def _load(path: str) -> Any:
    import importlib

    module, _, name = path.partition(":")
    value = importlib.import_module(module)
    for part in name.split("."):
        value = getattr(value, part)
    return value


def register_domain(generator: Any, *, env_id: str | None = None) -> str:
    """Add a Python domain without editing the package: ``generator`` is a
    :class:`~seal_envs.core.generator.DomainGenerator` (or its class) whose ``backend`` is a
    :class:`~seal_envs.core.backend.Backend` subclass. The domain gets the native splits (train
    400, test 200, ood 200 with held-out phrasings), task ids ``domain/split/dN/seed``
    (``seal show``), and an id (``seal/ToolUse-<Domain>-v0`` unless ``env_id`` names one) that
    ``gym.make``, ``seal eval`` and ``seal play`` take. The default mixture ``seal/ToolUse-v0``
    is left as it is (its pinned tasks do not move). Returns the id; registering the same
    generator again returns it again, another generator under a taken domain name is an error."""
    from seal_envs.core.generator import DomainGenerator
    from seal_envs.domains import GENERATORS

    if isinstance(generator, type):
        generator = generator()
    if not isinstance(generator, DomainGenerator) or not generator.domain:
        raise TypeError(f"a domain is a DomainGenerator instance with a domain name, got {generator!r}")
    domain = generator.domain
    if not domain.replace("_", "").isalnum() or "/" in domain:
        raise ValueError(f"domain name {domain!r}: use letters, digits and underscores (it is part of task ids)")
    known = GENERATORS.get(domain)
    if known is not None and known is not generator and type(known) is not type(generator):
        raise ValueError(f"domain {domain!r} is already registered (by {type(known).__module__}."
                         f"{type(known).__name__}); choose another name")
    GENERATORS[domain] = generator
    env_id = env_id or DOMAIN_IDS.get(domain) or f"seal/ToolUse-{domain.title().replace('_', '')}-v0"
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=DOMAIN_ENTRY, disable_env_checker=False,
                     kwargs={"domain": domain, "generator": _import_path(generator)},
                     additional_wrappers=(VERIFY_WRAPPER,))
    return env_id


def make_domain_env(domain: str, generator: str | None = None, **kwargs: Any):
    """The entry point of a registered domain's id: in a fresh process (an async vector env's
    worker) the domain is registered again from its import path first."""
    from seal_envs.domains import GENERATORS
    from seal_envs.env import ToolUseEnv

    if domain not in GENERATORS and generator is not None:
        register_domain(_load(generator))
    if domain not in GENERATORS:
        raise ValueError(f"domain {domain!r} is not registered in this process (it was registered from __main__ "
                         f"or a module that cannot be imported here; register it in an importable module)")
    return ToolUseEnv(domains=(domain,), **kwargs)


def load_entry_point_domains() -> list[str]:
    """Register every domain that an installed package names in the ``seal_envs.domains``
    entry-point group; a broken one is a warning, never a failed ``import seal_envs``."""
    import warnings
    from importlib.metadata import entry_points

    ids = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ids.append(register_domain(ep.load()))
        except Exception as e:  # noqa: BLE001 - a third party's bug must not break every env
            warnings.warn(f"seal_envs: the domain entry point {ep.name!r} ({ep.value}) failed: "
                          f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=2)
    return ids


def registered_ids(with_arguments: bool = False) -> list[str]:
    """Every ``seal/`` id that ``gym.make`` builds without arguments; ``with_arguments=True`` adds
    those that need some (``PARAMETRIC_IDS``: an MCP server and its task file), which a framework
    adapter registers too so that its own ``make(id, **kwargs)`` reaches them."""
    return sorted(i for i in gym.registry if i.startswith("seal/") and (with_arguments or i not in PARAMETRIC_IDS))


def register_all() -> None:
    from seal_envs.bfcl.loader import available as bfcl_available
    from seal_envs.domains import GENERATORS

    def reg(env_id: str, entry_point: str = ENTRY, **kwargs) -> None:
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, kwargs=kwargs, disable_env_checker=False,
                         additional_wrappers=(VERIFY_WRAPPER,))

    reg("seal/ToolUse-v0")
    reg("seal/ToolUse-OOD-v0", split="ood")
    for domain, env_id in DOMAIN_IDS.items():
        if domain in GENERATORS:
            reg(env_id, domains=(domain,))
    reg(MCP_ID, MCP_ENTRY)
    load_entry_point_domains()
    if bfcl_available():
        for category, env_id in BFCL_IDS.items():
            reg(env_id, BFCL_ENTRY, **({} if category is None else {"categories": (category,)}))
