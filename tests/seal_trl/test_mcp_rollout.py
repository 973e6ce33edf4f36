"""Stock TRL's GRPOTrainer with SEAL's rollout_func and a CoEvolution on seal/MCP-v0 (the example
ticketing server): the MCP env trains and evolves as a native one does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("datasets")
torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytest.importorskip("mcp")

import seal_envs  # noqa: E402,F401
from seal_helpers import ScriptedPolicy, small_model  # noqa: E402
from seal_trl.play.data import env_reward, make_dataset, make_rollout_func  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp_tickets"
KWARGS = {"server": [sys.executable, str(EXAMPLE / "server.py")], "tasks": str(EXAMPLE / "tasks.jsonl")}


class _Lazy:
    def __init__(self, rollout_func):
        self.rollout_func = rollout_func

    @property
    def current_envs(self):
        return self.rollout_func.state["rollout"].current_envs


@pytest.mark.slow
def test_grpo_with_the_rollout_func_and_a_coevolution_on_an_mcp_env(tok, tmp_path):
    from trl import GRPOConfig, GRPOTrainer

    from seal_envs import CoEvolution

    co = CoEvolution({"window": 1, "min_episodes": 1, "raise_threshold": 0.2, "fade_threshold": 0.0})
    scripted, seen = ScriptedPolicy(tok), []
    dataset = make_dataset("seal/MCP-v0", num_rows=4, env_kwargs=KWARGS)
    assert set(dataset["env_id"]) == {"seal/MCP-v0"} and len(set(dataset["task_id"])) == 4
    rollout_func = make_rollout_func("seal/MCP-v0", env_kwargs=KWARGS, max_episode_steps=4, max_new_tokens=64,
                                     generate_fn=scripted, coevolution=co, on_results=seen.append, tasks=dataset)
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, activation_checkpointing=False,
                      report_to="none", save_strategy="no", max_steps=1, per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=256, learning_rate=1e-2, disable_tqdm=True)
    trainer = GRPOTrainer(model=small_model(tok), reward_funcs=env_reward, args=args,
                          train_dataset=dataset, processing_class=tok, rollout_func=rollout_func)
    scripted.rollout = _Lazy(rollout_func)
    try:
        trainer.train()
        results = seen[0]
        assert len(results) == 4 and {r.passed for r in results} == {True, False}  # the scripted mix
        assert any(lb["label"] == "format_error" for r in results for lb in r.step_labels)
        assert co.evolver.updates == 1 and co.surface.version > 0
        assert all(env.unwrapped.surface is co.surface for env in rollout_func.pool.envs)
    finally:
        rollout_func.pool.close()


@pytest.mark.slow
def test_seal_grpo_trainer_on_an_mcp_env(tok, tmp_path):
    from seal_helpers import cpu_args

    from seal_trl import SEALGRPOTrainer

    args = cpu_args(tmp_path, env_id="seal/MCP-v0", env_kwargs=KWARGS, max_steps=1)
    scripted = ScriptedPolicy(tok)
    trainer = SEALGRPOTrainer(model=small_model(tok), args=args, processing_class=tok, generate_fn=scripted,
                              train_dataset=make_dataset("seal/MCP-v0", num_rows=4, env_kwargs=KWARGS))
    scripted.rollout = trainer.seal_rollout
    try:
        trainer.train()
        logged = trainer.state.log_history[0]
        assert 0.0 < logged["rewards/env_reward/mean"] < 1.0, logged  # the scripted mix of passes and failures
    finally:
        for pool in trainer.seal_pools.values():
            pool.close()
