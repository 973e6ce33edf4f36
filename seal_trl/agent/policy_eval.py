"""Greedy success of a policy on the test and ood splits, canonical (frozen) surface.

A thin layer over :func:`seal_envs.eval.evaluate` with :class:`seal_trl.agent.agents.HFBatchAgent`
(temperature 0 = greedy; one batched ``generate`` per turn for all active episodes). The first
``limit`` indices of a split cycle through domains and difficulties, so any multiple of 20 (test)
or 40 (ood) is balanced. The standard error of a success rate ``p`` on ``n`` tasks is
``sqrt(p (1 - p) / n)``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

ENV_ID = "seal/ToolUse-v0"


def std_error(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.0) / n) if n else float("nan")


def evaluate_policy(model: Any, tokenizer: Any, split: str, limit: int, *, max_new_tokens: int = 96,
                    max_steps: int = 12, batch_size: int = 32, log=None,
                    domains: tuple[str, ...] | None = None, env_id: str = ENV_ID,
                    progress=None, env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Success, mean reward and progress, per difficulty / domain / held-out-ness, and label shares.

    ``progress(done, total)`` (a bar, :mod:`seal_trl.training.progress`) replaces the ``log`` lines."""
    from seal_envs.eval import evaluate
    from seal_trl.agent.agents import HFBatchAgent

    was_training = model.training
    device = str(next(model.parameters()).device)  # evaluate where the model is: a GPU-trained model stays there
    agent = HFBatchAgent(model, tokenizer, temperature=0.0, max_new_tokens=max_new_tokens, device=device)

    def log_progress(done: int, total: int) -> None:
        if log is not None:
            log(f"    eval {split}: {done}/{total} episodes")

    env_kwargs = {**(env_kwargs or {}), "max_steps": max_steps, **({"domains": domains} if domains is not None else {})}
    result = evaluate(env_id, agent, split=split, k=1, limit=limit, batch_size=batch_size,
                      env_kwargs=env_kwargs, agent_name=getattr(model, "name_or_path", None) or "policy",
                      progress=progress or log_progress)
    if was_training:
        model.train()
    eps = result.episodes
    n = len(eps)
    by_diff: dict[str, list[bool]] = defaultdict(list)
    for e in eps:
        by_diff[str(e["difficulty"])].append(bool(e["passed"]))
    p = result.success_rate
    return {
        "split": split, "tasks": n, "success": p, "stderr": std_error(p, n),
        "mean_reward": result.mean_reward,
        "progress": sum(e["progress"] for e in eps) / n if n else 0.0,
        "actions": sum(e["actions"] for e in eps) / n if n else 0.0,
        "by_difficulty": {d: sum(v) / len(v) for d, v in sorted(by_diff.items())},
        "by_domain": {d: row["success_rate"] for d, row in result.per_domain().items()},
        "label_fraction": {lb: row["fraction"] for lb, row in result.per_label().items()},
        "failed_checks": _count(c for e in eps for c in e["failed_checks"]),
        "seconds": round(result.seconds, 1),
        "passed_task_ids": [e["task_id"] for e in eps if e["passed"]],
    }


def _count(items) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for it in items:
        out[it] += 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1])[:12])
