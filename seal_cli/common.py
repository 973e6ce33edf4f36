"""What every ``seal`` command shares: the error a user can fix, output helpers, and the checks
that run before any slow work (a typo in an id or an unwritable ``--out`` costs a second, not a
model load)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

SPLIT_CHOICES = ("train", "test", "ood")


class CLIError(Exception):
    """A problem with the user's input: printed as ``seal: error: ...``, exit status 2."""


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=1, ensure_ascii=False, default=str))


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(cells[0]), line(["-" * w for w in widths])] + [line(r) for r in cells[1:]])


# -- your own tools: --server and --tasks ----------------------------------------------------
MCP_ID = "seal/MCP-v0"


def add_mcp_arguments(p) -> None:
    """``--server`` and ``--tasks``: an MCP server and a task file instead of a registered domain."""
    p.add_argument("--server", help="the command that starts an MCP server over stdio, e.g. "
                   "\"python examples/mcp_tickets/server.py\" (default: none; with --tasks, the env is seal/MCP-v0)")
    p.add_argument("--tasks", help="the task file (.jsonl or .yaml) for --server (default: none; docs/mcp.md)")


def mcp_env(args, env_id: str | None) -> tuple[str, dict[str, Any]]:
    """The env id and the extra ``gym.make`` arguments that ``--server``/``--tasks`` ask for."""
    import shlex

    server, tasks = getattr(args, "server", None), getattr(args, "tasks", None)
    if server is None and tasks is None:
        if env_id is None:
            raise CLIError("name an environment id (`seal envs` lists them), or give --server and --tasks")
        return env_id, {}
    if not server or not tasks:
        raise CLIError("--server and --tasks go together: the server's command and the task file for it")
    if env_id not in (None, MCP_ID):
        raise CLIError(f"--server and --tasks make a {MCP_ID} env; leave out the id {env_id!r} or name {MCP_ID}")
    return MCP_ID, {"server": shlex.split(server), "tasks": tasks}


# -- checks that run before any slow work -------------------------------------------------
def check_env(env_id: str, split: str | None = None, **env_kwargs: Any) -> int:
    """The number of tasks in ``split`` of ``env_id`` (its default split for ``None``), or a
    :class:`CLIError` that says what to type instead: run before a model loads, so a typo in
    the id or split costs a second, not a model load."""
    import gymnasium as gym

    import seal_envs  # noqa: F401  (registers the ids)

    if env_id not in gym.registry:
        raise CLIError(f"unknown environment id {env_id!r}; the ids are {', '.join(seal_envs.registered_ids())} "
                       "(`seal envs` lists them with their splits)")
    try:
        env = gym.make(env_id, disable_env_checker=True, **({"split": split} if split else {}), **env_kwargs)
        size = len(env.unwrapped.task_set)
        env.close()
    except (ImportError, ValueError, KeyError, NotImplementedError, ConnectionError) as e:
        raise CLIError(f"{env_id} cannot be used here{f' with split {split!r}' if split else ''}: {e} "
                       "(`seal envs` shows which ids and splits are available)") from None
    if size == 0:
        raise CLIError(f"split {split!r} of {env_id} has no tasks (`seal envs` lists the split sizes)")
    return size


def check_out(out: str | Path) -> Path:
    """Create the output folder ``out`` and prove it writable before the work whose results go
    there: a bad ``--out`` is found in a second, not after the run."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise CLIError(f"--out {path} is a file, not a folder; choose a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".seal-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise CLIError(f"cannot write to --out {path} ({e.strerror or e}); choose a folder you can write to") from None
    return path
