"""Our verdicts next to bfcl-eval's own, on the same trajectories: how the agreement is measured.

A trajectory is the calls the agent makes in each user turn. :func:`perturbations` derives
broken ones from an entry's ground truth (a call dropped, an argument changed, an extra call);
:func:`bfcl_passes` runs bfcl-eval's ``multi_turn_checker`` on it (and, where our checker
requires irrelevance, ``multi_turn_irrelevance_checker``); :func:`env_passes` plays it through
``ToolUseEnv`` in BFCL's Python call syntax. :func:`agreement` does both over many entries.

Only ``bfcl_eval.eval_checker.multi_turn_eval`` is imported from bfcl-eval here (its checker
and executor); each run uses its own model name and its cached instances are dropped after.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

import gymnasium as gym

from seal_envs.core.types import Task, ToolCall
from seal_envs.core.validation import validate_arguments

from . import loader
from .backend import specs_for
from .source import BFCLTaskSet, build_task

# The registered env, reached through Gymnasium's registry as any user reaches it: this package
# imports nothing above seal_envs.core (the registration imports the source, not the reverse).
ENV_ID = "seal/BFCL-MultiTurn-v0"
Trajectory = list[list[ToolCall]]
KINDS = ("drop", "change", "extra")
_RUNS = itertools.count()


def format_call(call: ToolCall) -> str:
    """BFCL's Python syntax with keyword arguments: ``mv(source='a', destination='b')``."""
    return f"{call.name}({', '.join(f'{k}={v!r}' for k, v in call.arguments.items())})"


def ground_truth_trajectory(task: Task) -> Trajectory:
    return [list(turn.plan) for turn in task.turns]


def _changed(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice((1, 2, 7))
    if isinstance(value, float):
        return value + rng.choice((0.5, 1.0, 10.0))
    if isinstance(value, str):
        return value + rng.choice(("x", "_2", " "))
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "extra": "x"}
    return "x"


def perturb(task: Task, kind: str, rng: random.Random) -> Trajectory:
    """One broken copy of the ground truth: ``drop``, ``change`` or ``extra`` (see module doc)."""
    traj = ground_truth_trajectory(task)
    slots = [(t, i) for t, calls in enumerate(traj) for i in range(len(calls))]
    if kind == "change":
        with_args = [(t, i) for t, i in slots if traj[t][i].arguments]
        if with_args:
            t, i = rng.choice(with_args)
            call = traj[t][i]
            name = rng.choice(sorted(call.arguments))
            traj[t][i] = ToolCall(call.name, {**call.arguments, name: _changed(call.arguments[name], rng)})
            return traj
        kind = "drop"
    if kind == "drop":
        t, i = rng.choice(slots)
        del traj[t][i]
        return traj
    if kind == "extra":
        t, i = rng.choice(slots)
        target = rng.randrange(len(traj))
        traj[target].insert(rng.randint(0, len(traj[target])), traj[t][i])
        return traj
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def perturbations(task: Task, seed: int = 0) -> list[tuple[str, Trajectory]]:
    """One trajectory of each kind, seeded by ``seed`` and the entry id."""
    return [(kind, perturb(task, kind, random.Random(f"{seed}:{task.task_id}:{kind}"))) for kind in KINDS]


def divergence_reason(task: Task, trajectory: Trajectory) -> str | None:
    """Why bfcl-eval and the env may judge ``trajectory`` differently by design, if they may.

    bfcl-eval runs any public method of the involved classes with whatever arguments the text
    holds; the env refuses a held-out function before its turn and validates arguments against
    the tool's schema first."""
    specs = specs_for(task.initial_state["involved_classes"])
    hidden = set(task.hidden_tools)
    for turn, calls in zip(task.turns, trajectory):
        hidden -= set(turn.new_tools)
        for call in calls:
            if call.name in hidden:
                return f"held-out function {call.name} called before its turn (bfcl-eval runs it, the env refuses it)"
            if call.name not in specs:
                continue
            error = validate_arguments(call.name, specs[call.name].parameters, call.arguments)
            if error is not None:
                return f"{call.name}: {error.message} (bfcl-eval runs it, the env rejects it)"
    return None


def bfcl_passes(task: Task, trajectory: Trajectory, irrelevance: bool) -> dict:
    """bfcl-eval's verdict: ``{"valid": bool, ...}`` as its checkers return it."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker as checker
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    entry = loader.entry_index()[task.task_id]
    ground_truth = loader.ground_truth(loader.category_of(task.task_id))[task.task_id]
    decoded = [[[format_call(c)] for c in turn] for turn in trajectory]
    model = f"sealcmp{next(_RUNS)}"
    try:
        result = checker.multi_turn_checker(decoded, ground_truth, entry, "multi_turn", model)
        if result["valid"] and irrelevance:
            result = checker.multi_turn_irrelevance_checker(decoded, ground_truth)
    finally:  # bfcl-eval caches instances in its module globals and never drops them
        for key in [k for k in vars(multi_turn_utils) if k.startswith(model)]:
            delattr(multi_turn_utils, key)
    return result


def env_passes(env, task: Task, trajectory: Trajectory) -> dict:
    """Play the trajectory through ``env`` (one call per action, BFCL syntax); the verification."""
    env.reset(options={"task": task})
    info: dict = {}
    for calls in trajectory:
        for call in calls:
            _, _, terminated, truncated, info = env.step(format_call(call))
            if terminated or truncated:
                return info["verdict"]
        _, _, terminated, truncated, info = env.step("Done.")
        if terminated or truncated:
            return info["verdict"]
    raise RuntimeError(f"{task.task_id}: the episode did not end after its last turn")


@dataclass
class Agreement:
    total: int = 0
    agree: int = 0
    bfcl_pass: int = 0
    disagreements: list[dict] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.agree / self.total if self.total else 1.0


def agreement(entry_ids: Sequence[str], seed: int = 0, irrelevance: Sequence[str] = ("miss_func",),
              include_ground_truth: bool = False) -> Agreement:
    """Our verdict against bfcl-eval's on the perturbations of each entry."""
    env = gym.make(ENV_ID, split="all", irrelevance=tuple(irrelevance), disable_env_checker=True).unwrapped
    report = Agreement()
    for entry_id in entry_ids:
        task = build_task(entry_id)
        runs = perturbations(task, seed)
        if include_ground_truth:
            runs.insert(0, ("none", ground_truth_trajectory(task)))
        for kind, traj in runs:
            theirs = bfcl_passes(task, traj, irrelevance=task.template in irrelevance)
            ours = env_passes(env, task, traj)
            report.total += 1
            report.bfcl_pass += bool(theirs["valid"])
            if bool(theirs["valid"]) == ours["passed"]:
                report.agree += 1
            else:
                report.disagreements.append({
                    "id": entry_id, "kind": kind, "bfcl": theirs["valid"], "ours": ours["passed"],
                    "bfcl_error": theirs.get("error_type", ""), "reason": divergence_reason(task, traj),
                    "our_failed": [c["name"] + ": " + c["detail"][:160] for c in ours["checks"] if not c["passed"]],
                })
    return report


def sample_ids(per_category: int, seed: int = 0, split: str = "all") -> list[str]:
    """``per_category`` entry ids of each category, drawn with ``seed``."""
    ids = []
    for category in loader.CATEGORIES:
        pool = list(BFCLTaskSet(split, (category,)).ids)
        ids.extend(sorted(random.Random(f"{seed}:{category}").sample(pool, min(per_category, len(pool)))))
    return ids


def main(argv: list[str] | None = None) -> None:
    """``python -m seal_envs.bfcl.compare``: agreement over every entry, as Markdown."""
    import argparse

    p = argparse.ArgumentParser(description="Our BFCL verdicts against bfcl-eval's on perturbed ground truths")
    p.add_argument("--per-category", type=int, default=loader.ENTRIES_PER_CATEGORY)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ground-truth", action="store_true", help="also check each unperturbed ground truth")
    a = p.parse_args(argv)
    ids = sample_ids(a.per_category, a.seed)
    for irrelevance, label in ((("miss_func",), "default (irrelevance on miss_func)"), ((), "checker only")):
        r = agreement(ids, a.seed, irrelevance, include_ground_truth=a.ground_truth)
        print(f"- {label}: {r.agree}/{r.total} agree ({100 * r.rate:.2f}%); bfcl-eval passes {r.bfcl_pass}")
        for d in r.disagreements:
            print(f"  - `{d['id']}` ({d['kind']}): bfcl-eval {'passes' if d['bfcl'] else 'fails'}, "
                  f"the env {'passes' if d['ours'] else 'fails'}: {d['reason'] or 'unexplained'}")


if __name__ == "__main__":
    main()
