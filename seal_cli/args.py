"""The flag types and the flags of ``seal train``. Every number is checked as it is parsed, with
argparse's own error message, and every help names its default and unit (issue 20)."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from seal_cli.common import add_mcp_arguments
from seal_envs.core.evolver import CURRICULUM_MODES
from seal_envs.core.surface import PRESETS
from seal_envs.core.weighting import MODES as WEIGHTING_MODES
from seal_envs.env import REWARD_MODES
from seal_envs.openai_agent import TOOLS_IN_PROMPT
from seal_trl.training.algorithms import ALGORITHMS, LOSS_TYPES  # plain data; loads no torch
from seal_trl.training.train import RECIPE, RL_TASK_POOLS  # the recipe's numbers; importing seal_trl.training.train loads no torch


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


def _names(text: str) -> tuple[str, ...]:
    """``a,b`` -> ``("a", "b")``; empty text -> ``()``."""
    return tuple(name.strip() for name in str(text).split(",") if name.strip())


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
    from seal_envs.core.statefile import MAX_FILE_DEPTH, StateFileError, check_bounds

    try:
        value = json.loads(raw)
        check_bounds(value, f"--set {name}")  # the bounds of every file the CLI reads
    except RecursionError:
        raise argparse.ArgumentTypeError(f"--set {name}: nested deeper than {MAX_FILE_DEPTH} levels") from None
    except StateFileError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    except ValueError:  # not JSON: a string, as documented
        value = raw
    return name, value


def _config_fields() -> set[str] | None:
    try:
        import dataclasses

        from seal_trl.training.config import SEALConfig
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
    p.add_argument("--env", default=r["env"], help="environment id (default %(default)s: the default agent's domain; "
                   "seal/MCP-v0 with --server and --tasks)")
    add_mcp_arguments(p)
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
    p.add_argument("--loss-type", default=r["loss_type"], choices=list(LOSS_TYPES),
                   help="TRL's loss normalisation (default %(default)s)")
    p.add_argument("--num-iterations", type=positive_int, default=r["num_iterations"],
                   help="optimisation passes over each batch of rollouts (default %(default)s)")
    p.add_argument("--difficulties", type=_difficulties, default=_difficulties(r["difficulties"]),
                   help=f"difficulties (1 to 4) of the RL tasks, e.g. 1,2 (default {r['difficulties']})")
    p.add_argument("--rl-tasks", default=r["rl_tasks"], choices=list(RL_TASK_POOLS),
                   help="fresh: new generated tasks that neither the warm start nor any split has seen; "
                        "train: the train split's 400 (sources without a generator, such as BFCL, always "
                        "use these) (default %(default)s)")
    p.add_argument("--rl-tools", type=_names, default=_names(r["rl_tools"]),
                   help="only RL tasks whose reference plan calls one of these tools, e.g. set_alert "
                        "(a tool whose arguments the agent gets wrong); default: every task")
    p.add_argument("--reward-mode", default=r["reward_mode"], choices=list(REWARD_MODES),
                   help="binary: 1 when every check passed; progress: the fraction of user turns passed "
                        "(default %(default)s)")
    p.add_argument("--skip-uniform-tasks", type=non_negative_int, default=r["skip_uniform_tasks"],
                   help="online filtering: GRPO steps a task with equal rewards in its last group is skipped "
                        "(default %(default)s: off)")
    p.add_argument("--resample-uniform-groups", type=non_negative_int, default=r["resample_uniform_groups"],
                   help="dynamic sampling: rounds replaying groups with equal rewards on other tasks "
                        "(default %(default)s: off)")
    p.add_argument("--max-episode-steps", type=positive_int, default=r["max_episode_steps"],
                   help="assistant actions per episode (default %(default)s)")
    p.add_argument("--max-new-tokens", type=positive_int, default=r["max_new_tokens"],
                   help="new tokens per action (default %(default)s)")
    p.add_argument("--eval-tasks", type=non_negative_int, default=r["eval_tasks"],
                   help="held-out test tasks evaluated greedily before and after training (default %(default)s; 0: none)")
    p.add_argument("--algorithm", choices=sorted(ALGORITHMS), default=None,
                   help="an RL algorithm of the matrix as its SEALConfig fields (seal_trl.training.algorithms): they win over "
                        "--loss-type and --weighting, and --set wins over them (default: the flags alone)")
    p.add_argument("--weighting", default=r["weighting"], choices=list(WEIGHTING_MODES),
                   help="SEAL's advantage reweighting from turn labels (default %(default)s; none = stock GRPO)")
    p.add_argument("--evolution", action=argparse.BooleanOptionalAction, default=r["evolution"],
                   help="let the evolver change the training surface; evaluation stays canonical (default off)")
    p.add_argument("--surface", default="canonical", choices=list(PRESETS),
                   help="training surface preset (observation_lite: the paper's static hints; default %(default)s); "
                        "evaluation stays canonical")
    p.add_argument("--tools-in-prompt", choices=list(TOOLS_IN_PROMPT), default="auto",
                   help="where the tools go when the model's chat template drops `tools`: auto puts them in the "
                        "system message then, as `seal eval` does (default %(default)s)")
    p.add_argument("--curriculum", nargs="?", const=CURRICULUM_MODES[0], default=None, choices=list(CURRICULUM_MODES),
                   help="sample tasks by the evolver's curriculum: bucket (the default mode: success rate of the "
                        "task's difficulty near one half) or learnability (where the training surface's hints "
                        "help most; needs --evolution or --surface observation_lite); the env picks from its whole "
                        "train split: with --rl-tasks train --difficulties 1,2,3,4 (default off)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed, >= 0 (default %(default)s)")
    p.add_argument("--threads", type=positive_int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--gpu", action="store_true", help="train on the GPU with bf16 (default off: CPU, fp32)")
    p.add_argument("--report-to", default="none",
                   help="experiment trackers, as TRL's report_to: tensorboard, trackio, wandb, mlflow, all or none; "
                        "comma-separated (default %(default)s; a tracker must be installed)")
    p.add_argument("--lora-r", type=non_negative_int, default=0,
                   help="LoRA rank: train adapters instead of all weights (peft; default %(default)s: off)")
    p.add_argument("--lora-alpha", type=positive_int, default=None, help="LoRA alpha (default: 2 x --lora-r)")
    p.add_argument("--lora-target-modules", default="all-linear",
                   help="modules LoRA adapts, comma-separated or all-linear (default %(default)s)")
    p.add_argument("--use-vllm", action=argparse.BooleanOptionalAction, default=False,
                   help="generate with vLLM (GPU, vllm installed; default off)")
    p.add_argument("--vllm-mode", default="colocate", choices=["colocate", "server"],
                   help="vLLM in the training process, or a `trl vllm-serve` server (default %(default)s)")
    p.add_argument("--set", dest="config_set", type=_config_field, action="append", default=[], metavar="FIELD=VALUE",
                   help="set any SEALConfig/GRPOConfig field, after the flags above; VALUE is JSON when it parses "
                        "(numbers, true, {\"ok\": 0.05}) and a string otherwise; repeatable "
                        "(e.g. --set tag_source=label --set apply_to=negative; default: none). Every field is "
                        "also a flag of its own (--warmup_ratio 0.1, parsed by TRL's TrlParser)")
    p.add_argument("--config", metavar="FILE.yaml",
                   help="a YAML mapping of these flags (by their names: steps, lr, report_to...) and any "
                        "SEALConfig field; flags on the command line win (default: none)")
    p.add_argument("--quiet", action="store_true", help="no progress bars; results are still printed (default off)")


# -- a YAML config and SEALConfig fields as flags (issue 18) ---------------------------------------
def _flag_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions if a.option_strings and a.dest not in ("help", "config", "debug")}


def config_file_argv(parser: argparse.ArgumentParser, path: str) -> list[str]:
    """The argv a YAML config stands for: its keys that name flags of ``parser`` as those flags
    (so argparse checks every value as it checks typed ones), the rest as ``--set FIELD=VALUE``.
    Put before the command line's own arguments, they lose to them (argparse keeps the last)."""
    from seal_envs.core.statefile import read_yaml

    data = read_yaml(path, "--config")  # the size and depth bounds of every file the CLI reads
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ValueError(f"--config {path}: expected a mapping of flags and SEALConfig fields, got {type(data).__name__}")
    actions, argv = _flag_actions(parser), []
    for key, value in data.items():
        action = actions.get(str(key).replace("-", "_"))
        if action is None or action.dest == "config_set":
            argv.append(f"--set={key}={json.dumps(value)}")  # a SEALConfig field: checked by _config_field
            continue
        flag = next(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse.BooleanOptionalAction):
            argv.append(flag if value else "--no-" + flag[2:])
        elif action.nargs == 0:  # store_true
            if value:
                argv.append(flag)
        else:
            text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            argv.append(f"{flag}={text}")
    return argv


def config_field_flags(extra: list[str]) -> list[tuple[str, Any]]:
    """``--FIELD VALUE`` arguments that ``seal train``'s own flags do not know, parsed by TRL's
    ``TrlParser`` over :class:`~seal_trl.training.config.SEALConfig` (its types and choices): ``(field,
    value)`` pairs for exactly the fields given. Anything else is an unrecognised argument."""
    if not extra:
        return []
    from trl import TrlParser

    from seal_trl.training.config import SEALConfig

    parser = TrlParser((SEALConfig,), exit_on_error=False)
    try:
        namespace, rest = parser.parse_known_args(extra)
    except argparse.ArgumentError as e:
        raise ValueError(str(e)) from None
    if rest:
        raise ValueError(f"unrecognized arguments: {' '.join(rest)} (`seal train --help` lists the flags; "
                         "any SEALConfig field works as --FIELD VALUE)")
    given = {a.dest for a in parser._actions for s in a.option_strings
             if any(x == s or x.startswith(s + "=") for x in extra)}
    return [(name, getattr(namespace, name)) for name in sorted(given)]
