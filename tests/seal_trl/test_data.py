"""The stock-TRL path: make_dataset, make_rollout_func and env_reward with an unmodified GRPOTrainer."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

pytest.importorskip("datasets")
torch = pytest.importorskip("torch")
pytest.importorskip("trl")

import seal_envs  # noqa: E402,F401
from seal_envs.core.frozen import thaw  # noqa: E402
from seal_helpers import ScriptedPolicy, small_model  # noqa: E402
from seal_trl.play.data import PromptTasks, env_reward, make_dataset, make_rollout_func, reset_args  # noqa: E402


def test_dataset_rows_carry_the_task_and_reproduce_it():
    """TRL's standard conversational form: plain messages, a tools column, the task in its own columns."""
    ds = make_dataset("seal/ToolUse-v0", "train", num_rows=6)
    assert len(ds) == 6
    assert set(ds.column_names) == {"prompt", "tools", "seed", "env_id", "task_id", "task_index", "split"}
    env = gym.make("seal/ToolUse-v0")
    tasks = PromptTasks(ds)
    for row in ds:
        assert all(set(m) == {"role", "content"} for m in row["prompt"])  # nothing but the messages
        assert tasks(row["prompt"]) == {"seed": row["seed"], "task_id": row["task_id"], "env_id": "seal/ToolUse-v0"}
        seed, options = reset_args(row)
        _, info = env.reset(seed=seed, options=options)
        assert info["task_id"] == row["task_id"]
        assert [m["content"] for m in info["new_messages"]] == [m["content"] for m in row["prompt"]]
        assert json.loads(row["tools"]) == info["tools"]
    assert len(set(ds["task_id"])) == 6


def test_curriculum_resets_by_seed_only():
    assert reset_args({"seed": 7, "task_id": "bank/train/d1/0"}, curriculum=True) == (7, None)
    assert reset_args({"seed": 7, "task_id": "bank/train/d1/0"}) == (7, {"task_id": "bank/train/d1/0"})


def test_prompts_not_in_the_datasets_are_refused():
    with pytest.raises(ValueError, match="make_dataset"):
        PromptTasks(make_dataset(num_rows=2))([{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match="tasks="):
        make_rollout_func("seal/ToolUse-v0")
    with pytest.raises(ValueError, match="env_reward"):
        env_reward(prompts=[], completions=[])
    assert env_reward(env_reward=[1, 0.5]) == [1.0, 0.5]


def test_unmodified_grpo_trainer_trains_with_the_rollout_func(tok, tmp_path):
    from trl import GRPOConfig, GRPOTrainer

    scripted = ScriptedPolicy(tok)
    seen = []
    dataset = make_dataset(num_rows=4)
    rollout_func = make_rollout_func("seal/ToolUse-v0", max_episode_steps=4, max_new_tokens=64, generate_fn=scripted,
                                     on_results=seen.append, tasks=dataset)
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, activation_checkpointing=False,
                      report_to="none", save_strategy="no", max_steps=1, per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=256, learning_rate=1e-2, disable_tqdm=True)
    trainer = GRPOTrainer(model=small_model(tok), reward_funcs=env_reward, args=args,
                          train_dataset=dataset, processing_class=tok, rollout_func=rollout_func)
    rollout = rollout_func.state.get("rollout")
    assert rollout is None  # built on the first call, from the trainer
    scripted.rollout = _LazyRollout(rollout_func)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    results = seen[0]
    assert len(results) == 4
    # the two episodes of each group played the same task
    assert results[0].info["task_id"] == results[1].info["task_id"]
    assert results[2].info["task_id"] == results[3].info["task_id"]
    assert scripted.calls == max(r.num_steps for r in results)
    assert trainer.state.log_history[0]["rewards/env_reward/mean"] == pytest.approx(
        sum(r.reward for r in results) / 4)
    assert any(not torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())


@pytest.mark.slow
def test_stock_rollout_func_evolves_the_surface_with_a_coevolution(tok, tmp_path):
    """One process: the rollout_func steps its CoEvolution on each training batch's own counts (the
    gather is the identity), hands the surface to its envs, and evaluation plays on frozen envs."""
    from trl import GRPOConfig, GRPOTrainer

    from seal_envs import CoEvolution

    evolver = {"window": 1, "min_episodes": 1, "raise_threshold": 0.2, "fade_threshold": 0.0}
    co, by_hand = CoEvolution(evolver), CoEvolution(evolver)
    scripted = ScriptedPolicy(tok)
    dataset = make_dataset(num_rows=4)
    rollout_func = make_rollout_func("seal/ToolUse-v0", max_episode_steps=4, max_new_tokens=64, generate_fn=scripted,
                                     coevolution=co, on_results=lambda rs: by_hand.evolve(r.info for r in rs),
                                     tasks=dataset)
    assert rollout_func.coevolution is co
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, activation_checkpointing=False,
                      report_to="none", save_strategy="no", max_steps=2, per_device_train_batch_size=4,
                      num_generations=2, max_completion_length=256, learning_rate=1e-2, disable_tqdm=True)
    trainer = GRPOTrainer(model=small_model(tok), reward_funcs=env_reward, args=args,
                          train_dataset=dataset, processing_class=tok, rollout_func=rollout_func)
    scripted.rollout = _LazyRollout(rollout_func)
    trainer.train()
    assert co.evolver.updates == 2 and co.surface.version > 0  # patched from the scripted failures
    assert co.surface.to_json() == by_hand.surface.to_json() and co.evolver.to_json() == by_hand.evolver.to_json()
    assert [env.unwrapped.surface for env in rollout_func.pool.envs] == [co.surface] * 4
    trainer.model.eval()  # an evaluation batch: frozen canonical envs, no update
    before = co.evolver.to_json()
    out = rollout_func(dataset.select(range(2))["prompt"], trainer)
    assert len(out["completion_ids"]) == 2 and co.evolver.to_json() == before
    assert rollout_func.eval_pool.envs and all(env.unwrapped.surface.frozen and env.unwrapped.surface.version == 0
                                               for env in rollout_func.eval_pool.envs)


def test_gather_counts_with_one_process_is_the_local_count():
    from types import SimpleNamespace

    from seal_trl.play.data import gather_counts

    local = {"x": 1}
    assert gather_counts(SimpleNamespace(accelerator=SimpleNamespace(num_processes=1)), local) == [local]


class _LazyRollout:
    """Resolves ``current_envs`` through the rollout that ``rollout_func`` builds on its first call."""

    def __init__(self, rollout_func):
        self.rollout_func = rollout_func

    @property
    def current_envs(self):
        return self.rollout_func.state["rollout"].current_envs


def test_dataset_of_given_tasks_resets_to_exactly_those_tasks():
    from seal_envs.tasks import fresh_tasks

    tasks = fresh_tasks(4, ("bank",), (2,))
    ds = make_dataset("seal/ToolUse-Bank-v0", "train", tasks=tasks)
    assert ds["task_id"] == [t.task_id for t in tasks] and ds["seed"] == [t.seed for t in tasks]
    env = gym.make("seal/ToolUse-Bank-v0")
    for row, task in zip(ds, tasks):
        _, info = env.reset(*(), **dict(zip(("seed", "options"), reset_args(row))))
        assert info["task_id"] == task.task_id and info["new_messages"][1]["content"] == task.turns[0].message


def test_rl_dataset_pools():
    from seal_trl.training.train import rl_dataset

    fresh = rl_dataset("seal/ToolUse-Bank-v0", (2, 3), pool="fresh", size=20)
    train = rl_dataset("seal/ToolUse-Bank-v0", (2, 3), pool="train")
    assert len(train) == 200 and 15 <= len(fresh) <= 20
    assert not set(fresh["task_id"]) & set(train["task_id"])
    assert {tid.split("/")[2] for tid in fresh["task_id"]} == {"d2", "d3"}
    with pytest.raises(ValueError, match="pool"):
        rl_dataset("seal/ToolUse-Bank-v0", (2,), pool="test")


def test_rl_tools_keep_only_tasks_that_call_them():
    """``--rl-tools``: RL on the tasks that exercise a tool the agent gets wrong; the same seeds
    every time, and a name no service has is an error, not an empty dataset."""
    from seal_envs.tasks import task_from_id
    from seal_trl.training.train import rl_dataset

    fresh = rl_dataset("seal/ToolUse-Bank-v0", (2, 3), pool="fresh", size=30, tools=("set_alert",))
    again = rl_dataset("seal/ToolUse-Bank-v0", (2, 3), pool="fresh", size=30, tools=("set_alert",))
    assert len(fresh) == 30 and fresh["task_id"] == again["task_id"]
    for task_id in fresh["task_id"]:
        assert "set_alert" in {c.name for c in task_from_id(task_id).plan}
    every = rl_dataset("seal/ToolUse-Bank-v0", (2, 3), pool="fresh", size=30)
    assert any("set_alert" not in {c.name for c in task_from_id(i).plan} for i in every["task_id"])
    train = rl_dataset("seal/ToolUse-Bank-v0", (2,), pool="train", tools=("freeze_card", "transfer"))
    assert 0 < len(train) < 100
    with pytest.raises(ValueError, match="unknown tool"):
        rl_dataset("seal/ToolUse-Bank-v0", (2,), pool="fresh", size=5, tools=("set_alrt",))
    with pytest.raises(ValueError, match="no train task"):
        rl_dataset("seal/ToolUse-Bank-v0", (1,), pool="train", tools=("open_account",))


def test_sources_without_a_generator_fall_back_to_the_train_split():
    import argparse

    pytest.importorskip("bfcl_eval")
    from seal_trl.training.train import rl_dataset, rl_tasks

    with pytest.raises(ValueError, match="--rl-tasks train"):
        rl_dataset("seal/BFCL-MultiTurn-v0", None, pool="fresh")
    said = []
    args = argparse.Namespace(env="seal/BFCL-MultiTurn-v0", rl_tasks="fresh", steps=1, tasks_per_step=1, difficulties=None)
    ds = rl_tasks(args, said.append)
    assert len(ds) > 0 and set(ds["split"]) == {"train"} and "train split" in said[0]
