"""What every framework adapter shares: which task a dataset row asks for, the env a worker
builds, the messages a chat-based trainer appends, and the one record of a finished episode.

Info keys are read here and nowhere else in ``seal_envs.integrations``, so a renaming of them
is one edit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

__all__ = ["RECORD_KEYS", "chat_messages", "final_record", "is_final", "make_env", "reset_arguments",
           "task_row"]

#: The final-info record: what a framework's trajectory keeps of a finished episode. The names
#: are the env's info keys, so :meth:`seal_envs.CoEvolution.count` reads a record as it reads
#: a final ``info``, whichever framework carried it.
RECORD_KEYS = ("task_id", "domain", "difficulty", "surface_version", "verdict", "step_labels",
               "official_turn_tags", "official_progress", "surface_canonical")
FINAL_KEY = "verdict"  # present in an info dict exactly when the episode has ended
#: Where frameworks put per-row data: verl and SkyRL ``extra_info``, SkyRL ``extras``, verifiers
#: ``info``; a key at the top of the row wins over the same key in one of these.
ROW_NESTS = ("extra_info", "extras", "info", "env_kwargs", "metadata")
ROW_KEYS = ("task_id", "seed", "index", "split", "domain", "difficulty")


class RowError(ValueError):
    """A dataset row that names no playable task (its message names the field)."""


def row_value(row: Mapping[str, Any], key: str) -> Any:
    if row.get(key) is not None:  # None at the top (an unset keyword) leaves a nested value in force
        return row[key]
    for nest in ROW_NESTS:
        inner = row.get(nest)
        if isinstance(inner, Mapping) and key in inner:
            return inner[key]
    return None


def _nonnegative_int(value: Any, key: str) -> int:
    if isinstance(value, str) and value.isdigit():
        return int(value)  # a dataset column read back as text
    if hasattr(value, "item") and not isinstance(value, (list, tuple)):
        value = value.item()  # numpy scalars from a dataframe row
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RowError(f"dataset row field {key!r} must be a non-negative integer, got {value!r}")
    return value


def reset_arguments(row: Mapping[str, Any] | None) -> tuple[int | None, dict[str, Any]]:
    """``(seed, options)`` for ``env.reset`` from a framework's dataset row.

    A row names its task by ``task_id`` (e.g. ``bank/train/d2/5``; BFCL ids too), by ``index``
    into the split, or by ``seed`` (the env draws a task from it, as ``env.reset(seed=...)``
    does), optionally narrowed by ``split``, ``domain`` and ``difficulty``; each key at the top
    of the row or inside ``extra_info``, ``extras``, ``info``, ``env_kwargs`` or ``metadata``.
    Other keys (the prompt, a reward spec) are ignored. A key of the wrong type is a
    :class:`RowError` (a ``ValueError``) that names it."""
    if row is None:
        return None, {}
    if not isinstance(row, Mapping):
        raise RowError(f"a dataset row is a mapping of column names to values, got {type(row).__name__}")
    found = {k: v for k in ROW_KEYS if (v := row_value(row, k)) is not None}
    options: dict[str, Any] = {}
    if "task_id" in found:
        if not isinstance(found["task_id"], str) or not found["task_id"]:
            raise RowError(f"dataset row field 'task_id' must be a task id string, got {found['task_id']!r}")
        options["task_id"] = found["task_id"]
    if "index" in found:
        options["index"] = _nonnegative_int(found["index"], "index")
    for key in ("split", "domain"):
        if key in found:
            if not isinstance(found[key], str):
                raise RowError(f"dataset row field {key!r} must be a string, got {found[key]!r}")
            options[key] = found[key]
    if "difficulty" in found:
        options["difficulty"] = _nonnegative_int(found["difficulty"], "difficulty")
    seed = _nonnegative_int(found["seed"], "seed") if "seed" in found else None
    return seed, options


def make_env(env_id: str, *, surface_channel: str | os.PathLike | None = None, **env_kwargs: Any) -> gym.Env:
    """The env a framework's worker steps: ``gym.make(env_id, **env_kwargs)`` (with its
    ``VerifyOnTruncation``), showing the newest surface of ``surface_channel`` at every reset
    when one is given (:class:`~seal_envs.integrations.channel.LatestSurface`)."""
    import seal_envs  # noqa: F401  (registers the ids)

    env = gym.make(env_id, disable_env_checker=True, **env_kwargs)
    if surface_channel is not None:
        from seal_envs.integrations.channel import LatestSurface

        env = LatestSurface(env, surface_channel)
    return env


def is_final(info: Mapping[str, Any]) -> bool:
    return FINAL_KEY in info


def final_record(info: Mapping[str, Any], reward: float | None = None) -> dict[str, Any]:
    """The record of a finished episode from its last ``info``: verdict (``verdict``),
    per-step labels (``step_labels``), the official per-user-turn tags and progress, the task
    and the surface version, and ``reward`` when given; plain JSON (a fresh copy), so any
    framework can log, pickle or send it. ``CoEvolution.count([record])`` reads it."""
    if not is_final(info):
        raise ValueError("final_record needs the info of an episode's last step (it has no 'verdict' yet)")
    record = {k: info[k] for k in RECORD_KEYS if k in info}
    if reward is not None:
        record["reward"] = float(reward)
    return json.loads(json.dumps(record))


def chat_messages(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None,
                  *, assistant: bool = False) -> list[dict[str, Any]]:
    """Env transcript messages as a chat-based trainer appends them: ``role`` and ``content``
    (tool results keep ``name`` and ``tool_call_id``). The model's own turns are left out
    unless ``assistant`` (the trainer has them already). ``tools``, when given, are written
    into the system message one JSON line each, as the env's first observation shows them,
    for trainers that do not pass tools to the chat template."""
    out = []
    for m in messages:
        if m["role"] == "assistant" and not assistant:
            continue
        msg = {"role": m["role"], "content": m.get("content") or ""}
        if m["role"] == "tool":
            msg.update({k: m[k] for k in ("name", "tool_call_id") if k in m})
        elif m["role"] == "assistant" and m.get("tool_calls"):
            msg["tool_calls"] = [dict(c) for c in m["tool_calls"]]
        out.append(msg)
    if tools:
        lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
        block = f"Tools (one JSON schema per line):\n{lines}"
        if out and out[0]["role"] == "system":
            out[0]["content"] = f"{out[0]['content']}\n\n{block}" if out[0]["content"] else block
        else:
            out.insert(0, {"role": "system", "content": block})
    return out


def task_row(env_id: str, task_id: str, *, env_kwargs: Mapping[str, Any] | None = None,
             **extra: Any) -> dict[str, Any]:
    """A dataset row for ``task_id`` in the shape verl and SkyRL read (``prompt``: the task's
    first messages, tools in the system message; ``env_class``; ``extra_info``), for building
    a framework's dataset from a split: ``[task_row(id, t.task_id) for t in split]``.
    ``env_kwargs`` make the env as the workers will (an MCP server and its task file)."""
    env = make_env(env_id, **dict(env_kwargs or {}))
    try:
        _, info = env.reset(options={"task_id": task_id})
        prompt = chat_messages(info["new_messages"], info["tools"])
        return {"prompt": prompt, "env_class": env_id,
                "extra_info": {"task_id": task_id, "domain": info["domain"], **extra}}
    finally:
        env.close()
