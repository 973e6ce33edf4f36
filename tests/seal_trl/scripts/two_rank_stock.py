"""Run by ``accelerate launch --config_file configs/accelerate/cpu_2proc.yaml`` from test_scaling.py:
an unmodified ``trl.GRPOTrainer`` with ``seal_trl.make_rollout_func(..., coevolution=...)`` trains
two steps on two CPU processes (gloo), then every rank writes its surface, evolver state, the
surfaces its envs show, the labels it saw and
the surface a per-process evolver (fed from ``on_results`` alone) would have reached to ``<out>/rank<i>.json``.

    python two_rank_stock.py OUT [--policy scripted|model]

``--policy model`` samples with the trainer's own tiny policy instead of the scripted agent (the
real generation path under DDP or FSDP; its episodes mostly fail, so thresholds stay low).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/seal_trl: the helpers

from seal_helpers import RankPolicy, small_model  # noqa: E402

from seal_envs import CoEvolution  # noqa: E402
from seal_trl.play.data import env_reward, make_dataset, make_rollout_func  # noqa: E402
from seal_trl.agent.tiny import build_tiny_tokenizer  # noqa: E402


class LazyRollout:
    """The rollout ``rollout_func`` builds on its first call, read when the policy runs."""

    def __init__(self, rollout_func):
        self.rollout_func = rollout_func

    @property
    def current_envs(self):
        return self.rollout_func.state["rollout"].current_envs


def main(out: Path, policy_kind: str) -> None:
    from trl import GRPOConfig, GRPOTrainer

    rank = int(os.environ.get("RANK", "0"))  # set by the launcher; the trainer's accelerator agrees (checked below)
    tok = build_tiny_tokenizer()
    policy = RankPolicy(tok, rank) if policy_kind == "scripted" else None
    evolver = {"window": 1, "min_episodes": 1, "raise_threshold": 0.2, "fade_threshold": 0.0}
    co = CoEvolution(evolver)
    local = CoEvolution(evolver)  # the control: fed from this process's episodes only (what on_results sees)
    seen = []

    def on_results(results):
        seen.append(results)
        local.evolve(r.info for r in results)

    dataset = make_dataset(num_rows=8)
    rollout_func = make_rollout_func("seal/ToolUse-v0", max_episode_steps=4, max_new_tokens=48 if policy else 8,
                                     generate_fn=policy, coevolution=co, on_results=on_results, tasks=dataset)
    if policy is not None:
        policy.rollout = LazyRollout(rollout_func)
    args = GRPOConfig(output_dir=str(out / "run"), use_cpu=True, bf16=False, activation_checkpointing=False,
                      report_to="none", save_strategy="no", max_steps=2, per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=256, learning_rate=1e-2, disable_tqdm=True,
                      logging_steps=1, seed=0, ddp_backend="gloo")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
        trainer = GRPOTrainer(model=small_model(tok), reward_funcs=env_reward, args=args,
                              train_dataset=dataset, processing_class=tok,
                              rollout_func=rollout_func)
    trainer.train()
    acc = trainer.accelerator
    assert acc.process_index == rank
    state = {"rank": acc.process_index, "world": acc.num_processes, "step": trainer.state.global_step,
             "distributed_type": str(acc.distributed_type), "surface": co.surface.to_json(),
             "evolver": co.evolver.to_json(), "updates": co.evolver.updates,
             "local_surface": local.surface.to_json(),
             "env_surfaces": [env.unwrapped.surface.to_json() for env in rollout_func.pool.envs],
             "labels": sorted({d["label"] for batch in seen for r in batch for d in r.step_labels}),
             "episodes": sum(len(batch) for batch in seen)}
    (out / f"rank{state['rank']}.json").write_text(json.dumps(state))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("out", type=Path)
    p.add_argument("--policy", choices=("scripted", "model"), default="scripted")
    a = p.parse_args()
    main(a.out, a.policy)
