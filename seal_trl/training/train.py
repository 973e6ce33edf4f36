"""``seal train``: GRPO on a SEAL environment from the shipped default agent, evaluated on held-out
tasks before and after, written to a run folder ``seal report`` reads.

With no flags it runs :data:`RECIPE`: the default checkpoint (:mod:`seal_trl.agent.checkpoint`, an SFT
warm start that already calls tools) on the bank domain, greedy success on held-out ``test``
tasks before and after, and GRPO whose batches are spent on tasks with mixed rewards
(:mod:`seal_trl.training.sampling`). ``docs/trainer.md`` ("A recipe that learns on two CPU cores") has the
measurements behind every default. Any Hugging Face model id or path works through ``--model``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

from seal_envs.core.generator import DIFFICULTIES

#: Where RL tasks come from: ``fresh`` generated tasks no split has seen, or the ``train`` split.
RL_TASK_POOLS = ("fresh", "train")

#: The defaults of ``seal train`` (the recipe measured in docs/trainer.md).
RECIPE = {
    "model": "default", "env": "seal/ToolUse-Bank-v0", "steps": 16, "tasks_per_step": 8, "num_generations": 8,
    "lr": 5e-4, "temperature": 1.0, "beta": 0.04, "loss_type": "dapo", "num_iterations": 1,
    "difficulties": "2,3", "rl_tasks": "fresh", "reward_mode": "binary", "skip_uniform_tasks": 0, "resample_uniform_groups": 0,
    "rl_tools": "", "max_episode_steps": 12, "max_new_tokens": 64, "eval_tasks": 100, "weighting": "step", "evolution": False,
}


def seal_config(args: argparse.Namespace, quiet: bool = False) -> Any:
    """The ``SEALConfig`` of a ``seal train`` command line: its flags, then SEALConfig fields from
    ``--config``, ``--FIELD`` flags and ``--set`` (``args.config_set``, later ones winning). A tracker
    or vLLM that is asked for but not installed is an error here, before any model loads."""
    import importlib.util

    from seal_trl.training.config import SEALConfig

    if args.curriculum is not None and (args.rl_tasks != "train" or set(args.difficulties) != set(DIFFICULTIES)
                                        or getattr(args, "rl_tools", ())):
        raise ValueError("--curriculum lets the env pick from its whole train split, so the RL tasks must be those: "
                         "add --rl-tasks train --difficulties 1,2,3,4 (and no --rl-tools)")
    batch = args.tasks_per_step * args.num_generations
    fields = {**dict(
        output_dir=str(args.out), use_cpu=not args.gpu, bf16=args.gpu, activation_checkpointing=False,
        report_to=[r.strip() for r in str(args.report_to).split(",") if r.strip()] or "none",
        save_strategy="no", logging_steps=1, learning_rate=args.lr, lr_scheduler_type="constant",
        max_steps=args.steps, seed=args.seed, per_device_train_batch_size=batch,
        num_generations=args.num_generations, temperature=args.temperature, beta=args.beta,
        loss_type=args.loss_type, num_iterations=args.num_iterations,
        max_completion_length=args.max_episode_steps * (args.max_new_tokens + 96),
        env_id=args.env, env_kwargs={**_env_kwargs(args), "reward_mode": args.reward_mode}, max_episode_steps=args.max_episode_steps,
        max_new_tokens_per_step=args.max_new_tokens, weighting=args.weighting, evolution=args.evolution,
        curriculum=args.curriculum is not None, curriculum_mode=args.curriculum or "bucket", surface_preset=args.surface, evolver_min_episodes=4,
        tools_in_prompt=getattr(args, "tools_in_prompt", "auto"),
        skip_uniform_tasks=args.skip_uniform_tasks, resample_uniform_groups=args.resample_uniform_groups,
        use_vllm=args.use_vllm, vllm_mode=args.vllm_mode,
        disable_tqdm=quiet,  # the Trainer's bar over GRPO steps (rate and ETA)
    ), **_algorithm_fields(getattr(args, "algorithm", None)), **dict(args.config_set)}
    try:
        config = SEALConfig(**fields)
    except (TypeError, ValueError) as err:
        named = ", ".join(k for k, _ in args.config_set)
        raise ValueError(f"{'--set/--config ' + named + ': ' if named else ''}{err}") from None
    trackers = [r for r in config.report_to if r not in ("none", "all")]
    if trackers:
        from transformers.integrations import get_available_reporting_integrations

        missing = sorted(set(trackers) - set(get_available_reporting_integrations()))
        if missing:
            raise ValueError(f"--report-to {','.join(missing)}: not installed (pip install {' '.join(missing)})")
    if config.use_vllm and importlib.util.find_spec("vllm") is None:
        raise ValueError("--use-vllm: vllm is not installed (it needs a GPU: pip install vllm)")
    return config


def _env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The extra ``gym.make`` arguments of the training env: an MCP server and its task file
    (``--server``/``--tasks``, which the CLI turns into ``args.env_kwargs``), else none."""
    return dict(getattr(args, "env_kwargs", None) or {})


def _algorithm_fields(name: str | None) -> dict[str, Any]:
    from seal_trl.training.algorithms import ALGORITHMS

    return {} if name is None else dict(ALGORITHMS[name])


def lora_config(args: argparse.Namespace) -> Any:
    """A peft ``LoraConfig`` for ``--lora-r`` > 0 (TRL's ``peft_config``), else ``None``."""
    if not args.lora_r:
        return None
    from peft import LoraConfig

    modules = args.lora_target_modules
    return LoraConfig(r=args.lora_r, lora_alpha=args.lora_alpha or 2 * args.lora_r, task_type="CAUSAL_LM",
                      target_modules=modules if modules == "all-linear" else [m.strip() for m in modules.split(",")])


def prepare_out(out: Path, overwrite: bool) -> Path:
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise ValueError(f"run folder {out} is not empty; choose another --out or pass --overwrite")
    out.mkdir(parents=True, exist_ok=True)
    return out


def rl_dataset(env_id: str, difficulties: tuple[int, ...] | None, env_kwargs: dict | None = None,
               pool: str = "train", size: int = 400, tools: tuple[str, ...] = ()):
    """The RL tasks of the given difficulties (all of them for ``None``): the train split's
    (``pool="train"``), or ``size`` fresh train-phrasing tasks that no split and no warm-start step contains (``pool="fresh"``,
    :func:`seal_envs.tasks.fresh_tasks`; only for sources that generate tasks). With ``tools``,
    only tasks whose reference plan calls one of them: RL spent where a diagnosis found the
    agent failing (a tool whose arguments it gets wrong), not on what it already does."""
    from seal_trl.play.data import make_dataset

    task_set = _train_task_set(env_id, env_kwargs)
    check_tools(task_set, tools)
    if pool == "fresh":
        if not task_set.generated:
            raise ValueError(f"{env_id} has a fixed task list, not a generator: fresh tasks need one "
                             "(use the train split's tasks: --rl-tasks train)")
        return make_dataset(env_id, "train", env_kwargs=env_kwargs,
                            tasks=_fresh_using(size, task_set.domains, tuple(difficulties or ()) or (1, 2, 3, 4), tools))
    if pool not in RL_TASK_POOLS:
        raise ValueError(f"pool must be one of {RL_TASK_POOLS}, got {pool!r}")
    ds = make_dataset(env_id, "train", env_kwargs=env_kwargs)
    if difficulties is None and not tools:
        return ds
    keep = set(difficulties or (1, 2, 3, 4))
    ds = ds.filter(lambda row: task_set.slot(row["task_index"]).difficulty in keep)
    if tools:
        ds = ds.filter(lambda row: _uses(task_set[row["task_index"]], tools))
        if len(ds) == 0:
            raise ValueError(f"no train task of difficulties {sorted(keep)} calls {', '.join(tools)}")
    return ds


def check_tools(task_set: Any, tools: tuple[str, ...]) -> None:
    """Every name in ``tools`` is a tool of the generated domains' services: a typo is an error
    before any model loads, not an empty dataset. (A fixed task list, such as BFCL's, is
    checked by the filter: no task calling the names is an error there.)"""
    if not tools or not task_set.generated:
        return
    from seal_envs.domains import GENERATORS

    known = set().union(*(GENERATORS[d].backend.tool_specs() for d in task_set.domains))
    unknown = sorted(set(tools) - known)
    if unknown:
        raise ValueError(f"--rl-tools: unknown tool(s) {', '.join(unknown)}; tools: {', '.join(sorted(known))}")


def _uses(task: Any, tools: tuple[str, ...]) -> bool:
    return any(call.name in tools for call in task.plan)


def _fresh_using(size: int, domains: tuple[str, ...], difficulties: tuple[int, ...], tools: tuple[str, ...]) -> list:
    """``size`` fresh tasks (:func:`seal_envs.tasks.fresh_tasks`), only those calling one of
    ``tools`` when given: seeds are walked in order, so the set is the same in every process."""
    from seal_envs.tasks import FRESH_SEED, fresh_tasks

    if not tools:
        return fresh_tasks(size, domains, difficulties)
    found, start = [], FRESH_SEED
    for _ in range(50):
        found += [t for t in fresh_tasks(size, domains, difficulties, start=start) if _uses(t, tools)]
        start += size
        if len(found) >= size:
            return found[:size]
    if not found:
        raise ValueError(f"no generated task of difficulties {list(difficulties)} calls {', '.join(tools)}")
    return found


def rl_tasks(args: argparse.Namespace, log) -> Any:
    """The RL dataset of ``seal train``: fresh tasks, enough for every update to see new ones."""
    pool, env_kwargs = args.rl_tasks, _env_kwargs(args)
    if pool == "fresh" and not _train_task_set(args.env, env_kwargs).generated:
        log(f"[seal train] {args.env} has a fixed task list: RL uses its train split")
        pool = "train"
    size = max(400, 2 * args.steps * args.tasks_per_step)
    return rl_dataset(args.env, args.difficulties, env_kwargs, pool=pool, size=size,
                      tools=tuple(getattr(args, "rl_tools", ()) or ()))


def _train_task_set(env_id: str, env_kwargs: dict | None = None):
    import gymnasium as gym

    import seal_envs  # noqa: F401

    return gym.make(env_id, split="train", **(env_kwargs or {})).unwrapped.task_set


def evaluate(model, tokenizer, env_id: str, tasks: int, log, progress=None, env_kwargs: dict | None = None) -> dict | None:
    """Greedy success on the first ``tasks`` held-out test tasks (canonical surface)."""
    if not tasks:
        return None
    import torch

    from seal_trl.agent.policy_eval import evaluate_policy

    was_training = model.training
    model.eval()
    with torch.no_grad():
        result = evaluate_policy(model, tokenizer, "test", tasks, env_id=env_id, max_new_tokens=64, max_steps=12,
                                 batch_size=50, log=log, progress=progress, env_kwargs=env_kwargs)
    model.train(was_training)
    return result


def run(args: argparse.Namespace) -> Path:
    import torch

    from seal_trl.agent.tiny import load_model_and_tokenizer
    from seal_trl.training.trainer import SEALGRPOTrainer

    start = time.perf_counter()
    if args.threads:
        torch.set_num_threads(args.threads)
    quiet = getattr(args, "quiet", False)
    config = seal_config(args, quiet)  # a bad value fails now, not after the model loads and the first evaluation
    out = prepare_out(Path(args.out), args.overwrite)
    from seal_trl.training.progress import progress_bar, silence_library_bars

    if quiet:  # transformers' own bars too ("Loading weights" now, "Writing model shards" at the end)
        silence_library_bars()
    log = print  # the results; --quiet turns off the bars only
    dataset = rl_tasks(args, log)  # a bad task selection fails before the model loads
    model, tokenizer = load_model_and_tokenizer(args.model)
    if config.beta > 0 and (not getattr(model.config, "_name_or_path", "") or str(args.model).lower().endswith(".gguf")):
        # TRL loads the KL reference from the model's path; a model built in memory ('tiny') has
        # none, and a GGUF's path is its folder, which transformers cannot load without the file's
        # name: so its starting weights are saved in the run folder and the reference comes from there
        start_dir = out / "start_model"
        model.save_pretrained(start_dir)
        tokenizer.save_pretrained(start_dir)
        model.config._name_or_path = str(start_dir)
    bar = lambda desc: progress_bar(desc, "episode", quiet)  # noqa: E731  (one bar per evaluation)
    log(f"[seal train] {args.model} on {args.env}: greedy evaluation on {args.eval_tasks} held-out test tasks")
    before = evaluate(model, tokenizer, args.env, args.eval_tasks, None, bar("eval before"), _env_kwargs(args))
    if before is not None:
        log(f"[seal train] before training: held-out test success {before['success']:.3f} "
            f"(by difficulty {before['by_difficulty']}); now {args.steps} GRPO steps")
    callback = run_folder_callback(out)
    trainer = SEALGRPOTrainer(model=model, args=config, processing_class=tokenizer, peft_config=lora_config(args),
                              train_dataset=dataset, callbacks=[callback])
    callback.coevolution = trainer.seal_coevolution
    train_start = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - train_start
    after = evaluate(trainer.model, tokenizer, args.env, args.eval_tasks, None, bar("eval after"), _env_kwargs(args))
    trainer.save_model(str(out / "model"))
    trainer.save_state()
    trainer.save_seal_state(out)
    callback.writer.save_evolver(trainer.seal_coevolution.evolver)
    callback.writer.save_surface(trainer.seal_coevolution.surface)
    from seal_envs.report import write_report
    from seal_envs.run_folder import save_evaluation

    settings = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(args).items() if k != "func"}
    if before is not None:
        save_evaluation(out, before, after, settings=settings, train_seconds=train_seconds,
                        total_seconds=time.perf_counter() - start)
        d = after["success"] - before["success"]
        se = math.sqrt(before["stderr"] ** 2 + after["stderr"] ** 2)
        log(f"[seal train] held-out test success {before['success']:.3f} -> {after['success']:.3f} "
            f"({100 * d:+.1f} points; 2 SE = {200 * se:.1f}) in {train_seconds / 60:.1f} min of RL")
    write_report(out)
    return out


def run_folder_callback(out: Path):
    """A ``TrainerCallback`` that writes the run folder ``seal report`` reads while training runs:
    a ``metrics.jsonl`` line per logged step, and each surface patch with the step it came at.
    Built on demand so importing this module (the CLI does) stays free of transformers."""
    from transformers import TrainerCallback

    from seal_envs.run_folder import RunWriter, metrics_from_log_history

    class RunFolderCallback(TrainerCallback):
        def __init__(self) -> None:
            self.writer = RunWriter(out)
            self.coevolution = None
            self.seen_events = 0

        def on_log(self, args, state, control, logs=None, **kwargs):
            for record in metrics_from_log_history([{**(logs or {}), "step": state.global_step}]):
                self.writer.log(record.pop("step"), record)

        def on_step_end(self, args, state, control, **kwargs):
            events = self.coevolution.evolver.events if self.coevolution is not None else []
            fresh, self.seen_events = events[self.seen_events:], len(events)
            for event in fresh:
                patch = {k: v for k, v in event.items() if k != "update"}
                self.writer.log_patches(state.global_step, [patch], update=event["update"])

    return RunFolderCallback()
