"""One arm, one seed: GRPO (``SEALGRPOTrainer``) from the shared warm start, then evaluation.

Writes ``<out>/arms/<arm>/seed<k>/result.json`` when done (the resume marker): the arm's
overrides, the RL settings and sample budget, per-step training metrics (success, reward, label
fractions, surface version), the evolver's surface events, and greedy test/ood success.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from .arms import arm_overrides
from seal_envs.run_folder import TRAINER_PROGRESS, TRAINER_SUCCESS
from seal_trl.agent.policy_eval import ENV_ID, evaluate_policy
from .settings import EvalConfig, RLConfig
from seal_trl.agent.warmstart import load_warmstart

RESULT_FILE = "result.json"


def result_path(out: Path, arm: str, seed: int) -> Path:
    return Path(out) / "arms" / arm / f"seed{seed}" / RESULT_FILE


def rl_dataset(difficulties, domains: tuple[str, ...] | None = None) -> Any:
    from seal_trl.training.train import rl_dataset as train_tasks

    return train_tasks(ENV_ID, tuple(difficulties), {"domains": domains})


def _callback(log: Callable[[str], None], steps: int, start: float):
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            logs = logs or {}
            if TRAINER_SUCCESS not in logs:
                return
            log(f"    step {state.global_step}/{steps}: success {logs.get('seal/success_rate', 0):.3f} "
                f"reward {logs.get('reward', 0):.3f} progress {logs.get('seal/progress', 0):.3f} "
                f"surface v{int(logs.get('seal/surface_version', 0))} "
                f"[{time.perf_counter() - start:.0f} s]")

    return Progress()


def train_arm(arm: str, seed: int, out: Path, warm_dir: Path, rl: RLConfig, ev: EvalConfig,
              log: Callable[[str], None] = print, dataset: Any = None,
              domains: tuple[str, ...] | None = None) -> dict[str, Any]:
    import torch

    from seal_trl.training.config import SEALConfig
    from seal_trl.training.trainer import SEALGRPOTrainer

    path = result_path(out, arm, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    overrides = arm_overrides(arm)
    model, tokenizer = load_warmstart(warm_dir)
    start = time.perf_counter()
    config = SEALConfig(
        output_dir=str(path.parent / "trainer"), use_cpu=True, bf16=False, activation_checkpointing=False,
        report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True,
        learning_rate=rl.lr, lr_scheduler_type="constant", max_steps=rl.steps, seed=seed, beta=0.0,
        per_device_train_batch_size=rl.tasks_per_step * rl.num_generations, num_generations=rl.num_generations,
        temperature=rl.temperature, max_completion_length=rl.max_episode_steps * (rl.max_new_tokens_per_step + 96),
        env_id=ENV_ID, env_kwargs={"reward_mode": rl.reward_mode, "domains": domains}, max_episode_steps=rl.max_episode_steps,
        max_new_tokens_per_step=rl.max_new_tokens_per_step, evolver_min_episodes=rl.evolver_min_episodes,
        **overrides,
    )
    trainer = SEALGRPOTrainer(model=model, args=config, processing_class=tokenizer,
                              train_dataset=dataset if dataset is not None else rl_dataset(rl.difficulties, domains),
                              callbacks=[_callback(log, rl.steps, start)])
    trainer.train()
    train_seconds = time.perf_counter() - start
    history = [h for h in trainer.state.log_history if TRAINER_SUCCESS in h]
    label_frac: dict[str, float] = defaultdict(float)
    for h in history:
        for k, v in h.items():
            if k.startswith("seal/label_frac/"):
                label_frac[k.removeprefix("seal/label_frac/")] += v / max(len(history), 1)
    evolver = trainer.seal_coevolution.evolver
    model = trainer.model
    model.eval()
    with torch.no_grad():
        evals = {split: evaluate_policy(model, tokenizer, split, limit, max_new_tokens=ev.max_new_tokens,
                                        max_steps=ev.max_steps, batch_size=ev.batch_size, log=log,
                                        domains=domains)
                 for split, limit in (("test", ev.test_tasks), ("ood", ev.ood_tasks))}
    result = {
        "arm": arm, "seed": seed, "overrides": overrides, "rl": rl.to_dict(),
        "train": {
            "steps": trainer.state.global_step, "seconds": round(train_seconds, 1),
            "episodes": trainer.state.global_step * rl.tasks_per_step * rl.num_generations,
            "success_rate": [h.get(TRAINER_SUCCESS) for h in history],
            "reward": [h.get("reward") for h in history],
            "progress": [h.get(TRAINER_PROGRESS) for h in history],
            "reward_std": [h.get("reward_std") for h in history],
            "label_fraction": dict(sorted(label_frac.items())),
            "surface_version": trainer.seal_coevolution.surface.version,
            "surface_events": list(evolver.events),
        },
        "eval": evals,
        "seconds": round(time.perf_counter() - start, 1),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result, indent=1, default=str))
    tmp.replace(path)
    return result
