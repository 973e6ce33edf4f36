"""``SEALGRPOTrainer``: TRL's GRPO with batched multi-turn env rollouts, per-token advantage
weights from turn diagnoses, and the co-evolving environment surface.

What it overrides and why (TRL 1.16, see ``docs/trl_internals.md``):

* the rollout goes through TRL's ``rollout_func`` contract (``env_mask`` marks env tokens, which
  stay attended to but are masked out of the loss). TRL passes a rollout only the ``prompt``
  column, so ``_generate_and_score_completions`` stores the batch's rows first and the rollout
  resets env ``i`` with row ``i``'s ``seed`` (and ``task_id``): a GRPO group plays one task;
* ``_generate_and_score_completions`` multiplies TRL's advantages ``[B]`` by the token weights
  ``[B, T]`` once per generation batch. TRL buffers that output and reuses it for
  ``num_iterations`` passes and gradient-accumulation slices, so weights are never applied twice;
* after each training generation batch the diagnoses update the evolver (counts gathered from
  every process) and the same patches reach every rank's envs;
* ``_save_checkpoint`` / ``_load_optimizer_and_scheduler`` save and restore ``seal_state.json``
  (evolver, surface, dynamic tag weights) with every checkpoint.

Extra keys in the batch dict: ``seal_token_weights`` ``[B, T]`` and ``seal_base_advantages`` ``[B]``
(shuffled and split with the rest; read by logging and tests).
"""

from __future__ import annotations

import json
import os
import warnings
from collections import Counter
from typing import Any

import torch
from trl import GRPOTrainer

from seal_envs.coevolution import CoEvolution
from seal_envs.core.surface import surface_preset
from seal_envs.run_folder import (SEAL_STATE_FILE, TRAINER_LABEL_PREFIX, TRAINER_PROGRESS, TRAINER_SUCCESS,
                                  TRAINER_SURFACE_VERSION)

from .algorithms import resolve_advantage_fn
from .config import SEALConfig
from ..play.data import EPISODE_COLUMN, EnvPool, PromptTasks, env_reward, make_dataset, play_batch, rollout_output
from ..play.generation import sync_active_fn, trainer_generate_fn
from ..weighting.token_weigher import TokenWeigher
from ..play.generate_fn import GenerateFn
from ..play.rollout import EpisodeResult, MultiTurnRollout
from .sampling import TaskMemory, group_slices, is_uniform

__all__ = ["SEALGRPOTrainer"]



class SEALGRPOTrainer(GRPOTrainer):
    """GRPO on SEAL environments. Takes ``GRPOTrainer``'s arguments except ``tools``, ``rollout_func``
    and ``environment_factory`` (the trainer owns the rollout).

    ``train_dataset`` defaults to ``make_dataset(args.env_id, "train")``; ``reward_funcs`` to
    :func:`~seal_trl.play.data.env_reward`. ``generate_fn`` replaces the policy's sampling (scripted
    agents in tests, external inference servers); by default the trainer's own model (or vLLM)
    samples with its generation settings.
    """

    def __init__(self, model: Any, reward_funcs: Any = None, args: SEALConfig | None = None,
                 train_dataset: Any = None, eval_dataset: Any = None, processing_class: Any = None,
                 reward_processing_classes: Any = None, callbacks: Any = None,
                 optimizers: tuple[Any, Any] = (None, None), peft_config: Any = None, *,
                 generate_fn: GenerateFn | None = None, **kwargs: Any) -> None:
        if args is None or not isinstance(args, SEALConfig):
            raise TypeError(f"args must be a SEALConfig, got {type(args).__name__}")
        clash = sorted(k for k in ("tools", "rollout_func", "environment_factory") if kwargs.get(k) is not None)
        if clash:
            raise ValueError(f"SEALGRPOTrainer owns the rollout; do not pass {clash}")
        kwargs = {k: v for k, v in kwargs.items() if k not in ("tools", "rollout_func", "environment_factory")}
        if train_dataset is None:
            train_dataset = make_dataset(args.env_id, "train", env_kwargs=args.env_kwargs)
        self.seal_weigher = TokenWeigher.from_config(args)
        self.seal_coevolution = CoEvolution(args.evolver_kwargs(), evolve_surface=args.evolution,
                                            curriculum=args.curriculum, surface=surface_preset(args.surface_preset))
        self.seal_pools = {"train": EnvPool(args.env_id, args.make_env_kwargs()),
                           "eval": EnvPool(args.env_id, {**args.make_env_kwargs(), "evaluation": True})}
        self._seal_generate_fn = generate_fn
        if args.advantage_fn is not None and reward_funcs is not None:
            raise ValueError("advantage_fn works on the episodes' env rewards; it cannot be combined with reward_funcs")
        self.seal_advantage_fn = resolve_advantage_fn(args.advantage_fn) if args.advantage_fn else None
        self.seal_tasks, self.seal_task_rows = _task_memory(args, train_dataset)
        self._seal_rollout: MultiTurnRollout | None = None
        self._seal_rows: list[dict[str, Any]] | None = None
        self._seal_prompt_tasks: PromptTasks | None = None
        self.seal_prefix_stats: Counter = Counter()  # seal_trl.training.prefix_loss: rows shared / plain, fallbacks
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
            super().__init__(model=model, reward_funcs=reward_funcs or [env_reward], args=args,
                             train_dataset=train_dataset, eval_dataset=eval_dataset,
                             processing_class=processing_class, reward_processing_classes=reward_processing_classes,
                             callbacks=callbacks, optimizers=optimizers, peft_config=peft_config,
                             rollout_func=_seal_rollout_func, **kwargs)

    # -- rollout ----------------------------------------------------------------------------
    @property
    def seal_rollout(self) -> MultiTurnRollout:
        """The batched multi-turn rollout (built on first use; ``generate_calls`` counts its calls)."""
        if self._seal_rollout is None:
            self._seal_rollout = MultiTurnRollout(
                self.processing_class, self._seal_generate_fn or trainer_generate_fn(self),
                max_episode_steps=self.args.max_episode_steps, max_new_tokens=self.args.max_new_tokens_per_step,
                max_completion_length=self.args.max_completion_length,
                chat_template_kwargs=self.chat_template_kwargs, sync_active=sync_active_fn(self),
                eos_token_ids=self.eos_token_ids, tools_in_prompt=self.args.tools_in_prompt)
        return self._seal_rollout

    def seal_play(self, prompts: list[list[dict[str, Any]]]) -> dict[str, Any]:
        """Play one generation batch (TRL's ``rollout_func`` body)."""
        rows = self._seal_rows if self._seal_rows is not None and len(self._seal_rows) == len(prompts) else None
        if rows is None:  # TRL called without the rows: find the tasks by their prompts
            if self._seal_prompt_tasks is None:
                self._seal_prompt_tasks = PromptTasks(self.train_dataset, self.eval_dataset)
            rows = [self._seal_prompt_tasks(p) for p in prompts]
        mode = "train" if self.model.training else "eval"
        envs = self.seal_pools[mode].get(len(prompts))
        filtering = mode == "train" and self.seal_tasks is not None
        tasks = self._seal_prefilter(list(rows)) if filtering else rows
        results = play_batch(self.seal_rollout, envs, tasks, self.seal_coevolution,
                             curriculum=self.args.curriculum and mode == "train")
        if filtering:
            self._seal_resample(envs, list(tasks), results)
        return rollout_output(results)

    # -- which tasks a batch plays (seal_trl.training.sampling) ----------------------------------------
    def _seal_prefilter(self, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Swap groups whose task came out uniform lately for mixed or unseen tasks (no episode spent)."""
        keys = [t.get("task_id") for t in tasks]
        groups = group_slices(keys, self.num_generations)
        step = self.state.global_step
        cooling = [g for g in groups or [] if self.seal_tasks.cooling(keys[g.start], step)]
        fresh = self.seal_tasks.replacements(len(cooling), step, exclude=set(keys)) if cooling else []
        for g, key in zip(cooling, fresh):
            tasks[g] = [self.seal_task_rows[key]] * (g.stop - g.start)
        self._metrics["train"]["seal/sampling/skipped_groups"].append(float(len(fresh)))
        return tasks

    def _seal_resample(self, envs: list[Any], tasks: list[dict[str, Any]], results: list[EpisodeResult]) -> None:
        """Record every group's outcome; replay groups with equal rewards on other tasks (DAPO), in
        ``results``' place."""
        step = self.state.global_step
        keys = [t.get("task_id") for t in tasks]
        groups = group_slices(keys, self.num_generations) or []
        replayed = 0
        for round_ in range(self.args.resample_uniform_groups + 1):
            for g in groups:
                self.seal_tasks.record(keys[g.start], [r.reward for r in results[g]], step)
            uniform = [g for g in groups if is_uniform([r.reward for r in results[g]])]
            if round_ == self.args.resample_uniform_groups or not uniform:
                break
            fresh = self.seal_tasks.replacements(len(uniform), step, exclude=set(keys), salt=round_ + 1)
            if not fresh:
                break
            slots = [i for g in uniform[: len(fresh)] for i in range(g.start, g.stop)]
            for g, key in zip(uniform, fresh):
                keys[g] = [key] * (g.stop - g.start)
                tasks[g] = [self.seal_task_rows[key]] * (g.stop - g.start)
            replays = play_batch(self.seal_rollout, [envs[i] for i in slots], [tasks[i] for i in slots],
                                 curriculum=self.args.curriculum)
            for i, result in zip(slots, replays):
                results[i] = result
            replayed += len(fresh)
        metrics = self._metrics["train"]
        metrics["seal/sampling/replayed_groups"].append(float(replayed))
        metrics["seal/sampling/groups_mixed"].append(
            sum(not is_uniform([r.reward for r in results[g]]) for g in groups) / max(len(groups), 1))
        for key, value in self.seal_tasks.stats().items():
            metrics[f"seal/sampling/{key}"].append(value)

    # -- scoring ----------------------------------------------------------------------------
    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        self._seal_rows = inputs
        try:
            output = super()._generate_and_score_completions(inputs)
        finally:
            self._seal_rows = None
        mode = "train" if self.model.training else "eval"
        results = [row[EPISODE_COLUMN] for row in inputs]  # TRL merged the rollout's columns into its rows
        counts, rewards = self.seal_weigher.tag_stats([r.step_labels for r in results],
                                                      [r.info.get("official_turn_tags") for r in results],
                                                      [r.reward for r in results])
        stats = self._seal_gather({  # the one collective call of a SEAL step
            "tags": counts, "tag_rewards": rewards, "episodes": episode_counts(results),
            "pending": CoEvolution.count(r.info for r in results) if mode == "train" and self.seal_coevolution.active
            else {},
            "rewards": [float(r.reward) for r in results]})
        if mode == "train":
            self.seal_weigher.observe(stats["tags"], stats["tag_rewards"], epoch=int(self.state.epoch or 0))
            if self.seal_weigher.dynamic is not None:
                for tag, weight in self.seal_weigher.dynamic.active.items():
                    self._metrics[mode][f"seal/tag_weight/{tag}"].append(weight)
        if self.seal_advantage_fn is not None:
            output["advantages"] = self._seal_advantages(stats["rewards"], len(results), output["advantages"], mode)
        weights, index = self._seal_token_weights(results, output)
        output["seal_base_advantages"] = output["advantages"].clone()
        output["advantages"] = output["advantages"].unsqueeze(1) * weights
        output["seal_token_weights"] = weights
        self._seal_log(mode, stats, results, weights, index)
        if mode == "train" and self.seal_coevolution.active:
            patches = self.seal_coevolution.step(stats["pending"])
            self._metrics[mode]["seal/evolution_patches"].append(float(len(patches)))
        return output

    def _seal_advantages(self, rewards: list[float], local: int, like: torch.Tensor, mode: str) -> torch.Tensor:
        """``advantage_fn`` of every process's groups (``rewards`` in rank order: TRL lays groups
        out over the gathered batch), this process's slice of it."""
        group = self.num_generations if mode == "train" else self.num_generations_eval
        everyone = torch.tensor(rewards, dtype=torch.float32, device=like.device)
        advantages = self.seal_advantage_fn(everyone.view(-1, group)).reshape(-1)
        start = self.accelerator.process_index * local
        return advantages[start:start + local].to(like.dtype)

    def _seal_token_weights(self, results: list[EpisodeResult],
                            output: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """``([B, T] weights, [B, T] turn index)``; weights are 0 on env tokens and padding."""
        batch, width = output["completion_ids"].shape
        index = torch.full((batch, width), -1, dtype=torch.long)
        for b, result in enumerate(results):
            row = torch.as_tensor(result.step_index[:width], dtype=torch.long)
            index[b, : row.numel()] = row
        index = index.to(output["advantages"].device)
        reduce_fn = (lambda t: self.accelerator.reduce(t, reduction="sum")) if self.seal_weigher.budget else None
        weights = self.seal_weigher.weights(index, [r.step_labels for r in results], output["advantages"], reduce_fn,
                                            [r.info.get("official_turn_tags") for r in results])
        return weights * output["completion_mask"].to(weights.dtype), index

    def _seal_gather(self, local: dict[str, Any]) -> dict[str, Any]:
        """Every process's statistics of the batch in one ``gather_object`` (rank order): the
        counters summed, ``pending`` (the co-evolution's counts) as a list per process, ``rewards``
        concatenated."""
        parts = [local]
        if self.accelerator.num_processes > 1:
            from accelerate.utils import gather_object

            parts = gather_object([local])
        total = {key: Counter() for key in ("tags", "tag_rewards", "episodes")}
        for part in parts:
            for key, counter in total.items():
                counter.update(part[key])
        return {**total, "pending": [part["pending"] for part in parts],
                "rewards": [r for part in parts for r in part["rewards"]]}

    # -- logging ----------------------------------------------------------------------------
    def _seal_log(self, mode: str, stats: dict[str, Any], results: list[EpisodeResult], weights: torch.Tensor,
                  index: torch.Tensor) -> None:
        """Success, progress and label shares of every process's episodes (``stats``); the mean
        weight per label of this process's (weights exist only after the one gather)."""
        total = stats["episodes"]
        labels = Counter({k[len("label/"):]: v for k, v in total.items() if k.startswith("label/")})
        w_sum, w_n = Counter(), Counter()
        for b, r in enumerate(results):
            for k, label in enumerate(r.step_labels):
                tokens = index[b] == k
                if bool(tokens.any()):
                    w_sum[label["label"]] += float(weights[b][tokens].mean())
                    w_n[label["label"]] += 1
        metrics = self._metrics[mode]
        metrics[TRAINER_SUCCESS].append(total["passed"] / max(total["n"], 1))
        metrics[TRAINER_PROGRESS].append(total["progress"] / max(total["n"], 1))
        n_labels = max(sum(labels.values()), 1)
        for name in sorted(labels):
            metrics[f"{TRAINER_LABEL_PREFIX}{name}"].append(labels[name] / n_labels)
            if w_n[name]:
                metrics[f"seal/weight/{name}"].append(w_sum[name] / w_n[name])
        for key, value in self.seal_rollout.last_stats.items():
            metrics[f"seal/rollout/{key}"].append(float(value))
        metrics[TRAINER_SURFACE_VERSION].append(float(self.seal_coevolution.surface.version))
        metrics["seal/evolution_events"].append(float(len(self.seal_coevolution.evolver.events)))

    # -- loss: each shared prompt encoded once (seal_trl.training.prefix_loss) --------------------------
    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **kwargs):
        """TRL's method, with the rows of each chunk that share a prompt scored on one prefix forward.

        Every log-probability TRL needs goes through here (the loss, old and reference
        log-probabilities), so all of them use the same path. Falls back to TRL's method as is when
        ``shared_prefix_loss`` is off, for images or MoE aux losses, and for models
        :func:`~seal_trl.training.prefix_loss.unsupported` rejects (the reason is counted in ``seal_prefix_stats``).
        """
        from .prefix_loss import VISION_KEYS, shared_prefix_logps, unsupported

        base = super()._get_per_token_logps_and_entropies
        why = [] if self.args.shared_prefix_loss else ["off"]
        if not why:
            why = ["images"] if any(kwargs.get(k) is not None for k in VISION_KEYS) else []
            why += ["aux loss"] if compute_aux_loss else []
            why = why or unsupported(model, num_processes=self.accelerator.num_processes)
        if why:
            self.seal_prefix_stats.update(f"fallback: {reason}" for reason in why)
            return base(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                        compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **kwargs)

        def plain(ids, mask):
            return base(model, ids, mask, logits_to_keep, compute_entropy=compute_entropy)

        batch_size = batch_size or input_ids.size(0)
        logps, entropies = [], []
        for start in range(0, input_ids.size(0), batch_size):  # TRL's chunks: the same memory bound
            lp, ent = shared_prefix_logps(model, input_ids[start:start + batch_size],
                                          attention_mask[start:start + batch_size], logits_to_keep,
                                          compute_entropy=compute_entropy, plain=plain,
                                          autocast=self.accelerator.autocast, stats=self.seal_prefix_stats)
            logps.append(lp)
            entropies.append(ent)
        return torch.cat(logps, dim=0), (torch.cat(entropies, dim=0) if compute_entropy else None), None

    # -- checkpointing ------------------------------------------------------------------------
    def seal_state_dict(self) -> dict[str, Any]:
        state = {"format": 1, "coevolution": self.seal_coevolution.state_dict(),
                 "weigher": self.seal_weigher.state_dict()}
        if self.seal_tasks is not None:
            state["task_memory"] = self.seal_tasks.state_dict()
        return state

    def load_seal_state_dict(self, state: dict[str, Any], source: str = "SEAL state") -> None:
        state = check_seal_state(state, source)
        self.seal_coevolution.load_state_dict(state["coevolution"], source)
        self.seal_weigher.load_state_dict(state["weigher"], source, "weigher/")
        if self.seal_tasks is not None and "task_memory" in state:
            self.seal_tasks.load_state_dict(state["task_memory"])

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

            self.save_seal_state(os.path.join(self._get_output_dir(trial=trial),
                                              f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"))

    def save_seal_state(self, folder: str | os.PathLike) -> str:
        """Write :data:`~seal_envs.run_folder.SEAL_STATE_FILE` into ``folder`` (a checkpoint or the
        run folder): what resuming and ``seal report`` read besides TRL's own state."""
        path = os.path.join(folder, SEAL_STATE_FILE)
        with open(path, "w") as f:
            json.dump(self.seal_state_dict(), f, sort_keys=True, indent=1, default=str)
        return path

    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        super()._load_optimizer_and_scheduler(checkpoint)
        if not checkpoint:
            return
        path = os.path.join(checkpoint, SEAL_STATE_FILE)
        state = read_seal_state(path, allow_missing=self.args.resume_without_seal_state)
        if state is not None:
            self.load_seal_state_dict(state, f"SEAL state file {path}")


def check_seal_state(state: Any, source: str) -> dict[str, Any]:
    """The trainer's SEAL state if it is format 1 with its parts present and the weigher's valid,
    else an error naming ``source`` and the field (the evolver and surface validate when loaded)."""
    from seal_envs.core.statefile import StateFileError

    if not isinstance(state, dict):
        raise StateFileError(f"{source}: expected a JSON object, got {type(state).__name__}")
    if state.get("format") != 1:
        raise StateFileError(f"{source}: field 'format' is {state.get('format')!r}; this trainer reads format 1")
    for key, kind in (("coevolution", dict), ("weigher", dict)):
        if not isinstance(state.get(key), kind):
            raise StateFileError(f"{source}: field '{key}' is missing or not an object")
    if not isinstance(state["coevolution"].get("evolver"), dict):
        raise StateFileError(f"{source}: field 'coevolution/evolver' is missing or not an object")
    if not isinstance(state["coevolution"].get("surface"), str):
        raise StateFileError(f"{source}: field 'coevolution/surface' is missing or not a string")
    TokenWeigher.check_state(state["weigher"], source, "weigher/")
    return state


def read_seal_state(path: str, allow_missing: bool = False) -> dict[str, Any] | None:
    """The ``seal_state.json`` of a checkpoint. Resuming without it would restart the evolver and
    the surface from scratch under a policy trained past them, silently: that is an error unless
    ``allow_missing`` (``SEALConfig.resume_without_seal_state``) asks for it."""
    from seal_envs.core.statefile import StateFileError, read_json

    if not os.path.exists(path):
        if allow_missing:
            warnings.warn(f"{path} is missing: the evolver and the surface start afresh (resume_without_seal_state)")
            return None
        raise StateFileError(f"SEAL state file {path} is missing: the checkpoint holds no evolver or surface "
                             "state. Set resume_without_seal_state=True to resume with fresh ones.")
    return check_seal_state(read_json(path, "SEAL state"), f"SEAL state file {path}")


def episode_counts(results: list[EpisodeResult]) -> Counter:
    """What a process's episodes add to the logged totals: episodes, passed, progress, and the
    count of every step label (``label/<name>``)."""
    counts = Counter({"n": len(results), "passed": sum(r.passed for r in results),
                      "progress": sum(float(r.info.get("verdict", {}).get("progress", 0.0)) for r in results)})
    counts.update(f"label/{d['label']}" for r in results for d in r.step_labels)
    return counts


def _task_memory(args: SEALConfig, dataset: Any) -> tuple[TaskMemory | None, dict[str, dict[str, Any]]]:
    """The task memory for ``skip_uniform_tasks`` / ``resample_uniform_groups`` (``None`` when off)."""
    if not (args.skip_uniform_tasks or args.resample_uniform_groups):
        return None, {}
    columns = set(getattr(dataset, "column_names", None) or [])
    if not {"seed", "task_id"} <= columns:
        raise ValueError("skip_uniform_tasks and resample_uniform_groups pick tasks from the train dataset, which "
                         f"needs 'seed' and 'task_id' columns (seal_trl.make_dataset gives them); got {sorted(columns)}")
    if args.world_size > 1 and args.resample_uniform_groups:
        raise ValueError("resample_uniform_groups replays whole GRPO groups, which needs one process (a group can "
                         f"span processes); got {args.world_size} processes")
    rows = {tid: {"seed": int(seed), "task_id": tid} for tid, seed in zip(dataset["task_id"], dataset["seed"])}
    return TaskMemory(list(rows), cooldown=args.skip_uniform_tasks, seed=args.seed), rows


def _seal_rollout_func(prompts: list[list[dict[str, Any]]], trainer: SEALGRPOTrainer) -> dict[str, Any]:
    return trainer.seal_play(prompts)
