"""The flag types and the flags of ``seal train``. Every number is checked as it is parsed, with
argparse's own error message, and every help names its default and unit (issue 20)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from seal_trl.train import RECIPE  # the recipe's numbers; importing seal_trl.train loads no torch


def _at_least(minimum: int):
    """An argparse type: an integer >= ``minimum``, with argparse's error message otherwise."""
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = "int"  # argparse names the type in "invalid int value" errors
    return parse


positive_int, non_negative_int = _at_least(1), _at_least(0)


def _number(check, wanted: str):
    """An argparse type: a finite float passing ``check``, argparse's error message otherwise."""
    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or not check(value):
            raise argparse.ArgumentTypeError(f"must be {wanted}, got {text}")
        return value

    parse.__name__ = "float"  # argparse names the type in "invalid float value" errors
    return parse


positive_float = _number(lambda v: v > 0, "a positive number")
non_negative_float = _number(lambda v: v >= 0, "a number >= 0")
probability = _number(lambda v: 0 < v <= 1, "a number in (0, 1]")


def _difficulties(text: str) -> tuple[int, ...]:
    try:
        values = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 1,2; got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"difficulties are integers >= 1, got {text!r}")
    return values


def _config_field(text: str) -> tuple[str, Any]:
    """``FIELD=VALUE`` for ``--set``: the field must be one of SEALConfig's (checked without
    importing TRL when it is not installed: the trainer then refuses it at start)."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected FIELD=VALUE, got {text!r}")
    known = _config_fields()
    if known is not None and name not in known:
        close = sorted(f for f in known if name.replace("-", "_") in f)[:5]
        raise argparse.ArgumentTypeError(f"{name!r} is not a SEALConfig field" + (f"; did you mean {', '.join(close)}?" if close else ""))
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    return name, value


def _config_fields() -> set[str] | None:
    try:
        import dataclasses

        from seal_trl.config import SEALConfig
    except ImportError:
        return None
    return {f.name for f in dataclasses.fields(SEALConfig)}


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of ``seal train``; every help names its default and unit (issue 20)."""
    r = RECIPE
    p.add_argument("--out", default="runs/seal-train",
                   help="run folder (default %(default)s; refused if not empty, see --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="write into a run folder that is not empty (default off)")
    p.add_argument("--model", default=r["model"],
                   help="'default' (the shipped warm start), 'tiny' (random weights, offline) or a Hugging Face "
                        "model id or folder (default %(default)s)")
    p.add_argument("--env", default=r["env"], help="environment id (default %(default)s: the default agent's domain)")
    p.add_argument("--steps", type=positive_int, default=r["steps"], help="GRPO updates (default %(default)s)")
    p.add_argument("--tasks-per-step", type=positive_int, default=r["tasks_per_step"],
                   help="tasks per update; each is played --num-generations times (default %(default)s)")
    p.add_argument("--num-generations", type=positive_int, default=r["num_generations"],
                   help="episodes per task: the GRPO group (default %(default)s)")
    p.add_argument("--lr", type=positive_float, default=r["lr"], help="learning rate, constant (default %(default)s)")
    p.add_argument("--temperature", type=positive_float, default=r["temperature"],
                   help="sampling temperature of the training episodes, > 0 (default %(default)s)")
    p.add_argument("--beta", type=non_negative_float, default=r["beta"],
                   help="KL coefficient to the starting model, >= 0 (default %(default)s: keeps what the warm start can do; 0 turns it off)")
    p.add_argument("--loss-type", default=r["loss_type"], choices=["grpo", "dapo", "dr_grpo", "bnpo"],
                   help="TRL's loss normalisation (default %(default)s)")
    p.add_argument("--num-iterations", type=positive_int, default=r["num_iterations"],
                   help="optimisation passes over each batch of rollouts (default %(default)s)")
    p.add_argument("--difficulties", type=_difficulties, default=_difficulties(r["difficulties"]),
                   help=f"difficulties (1 to 4) of the RL tasks, e.g. 1,2 (default {r['difficulties']})")
    p.add_argument("--rl-tasks", default=r["rl_tasks"], choices=["fresh", "train"],
                   help="fresh: new generated tasks that neither the warm start nor any split has seen; "
                        "train: the train split's 400 (sources without a generator, such as BFCL, always "
                        "use these) (default %(default)s)")
    p.add_argument("--reward-mode", default=r["reward_mode"], choices=["binary", "progress"],
                   help="binary: 1 when every check passed; progress: the fraction of user turns passed "
                        "(default %(default)s)")
    p.add_argument("--skip-uniform-tasks", type=non_negative_int, default=r["skip_uniform_tasks"],
                   help="online filtering: GRPO steps a task with equal rewards in its last group is skipped "
                        "(default %(default)s: off)")
    p.add_argument("--resample-uniform-groups", type=non_negative_int, default=r["resample_uniform_groups"],
                   help="dynamic sampling: rounds replaying groups with equal rewards on other tasks "
                        "(default %(default)s: off)")
    p.add_argument("--max-turns", type=positive_int, default=r["max_turns"],
                   help="assistant actions per episode (default %(default)s)")
    p.add_argument("--max-new-tokens", type=positive_int, default=r["max_new_tokens"],
                   help="new tokens per action (default %(default)s)")
    p.add_argument("--eval-tasks", type=non_negative_int, default=r["eval_tasks"],
                   help="held-out test tasks evaluated greedily before and after training (default %(default)s; 0: none)")
    p.add_argument("--weighting", default=r["weighting"], choices=["none", "trajectory", "turn"],
                   help="SEAL's advantage reweighting from turn labels (default %(default)s: stock GRPO)")
    p.add_argument("--evolution", action=argparse.BooleanOptionalAction, default=r["evolution"],
                   help="let the evolver change the training surface; evaluation stays canonical (default off)")
    p.add_argument("--surface", default="canonical", choices=["canonical", "observation_lite"],
                   help="training surface preset (observation_lite: the paper's static hints; default %(default)s); "
                        "evaluation stays canonical")
    p.add_argument("--curriculum", action="store_true", help="sample tasks by the evolver's curriculum (default off)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed, >= 0 (default %(default)s)")
    p.add_argument("--threads", type=positive_int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--gpu", action="store_true", help="train on the GPU with bf16 (default off: CPU, fp32)")
    p.add_argument("--set", dest="config_set", type=_config_field, action="append", default=[], metavar="FIELD=VALUE",
                   help="set any SEALConfig/GRPOConfig field, after the flags above; VALUE is JSON when it parses "
                        "(numbers, true, {\"ok\": 0.05}) and a string otherwise; repeatable "
                        "(e.g. --set tag_source=label --set apply_to=negative; default: none)")
    p.add_argument("--quiet", action="store_true", help="no progress bars; results are still printed (default off)")
