"""Online filtering and dynamic sampling: which tasks a GRPO batch spends its episodes on."""

from __future__ import annotations

import pytest

from seal_trl.training.sampling import TaskMemory, group_slices, is_uniform


def test_is_uniform_and_group_slices():
    assert is_uniform([1.0, 1.0]) and is_uniform([0.0, 0.0, 0.0]) and not is_uniform([0.0, 1.0])
    assert group_slices(["a", "a", "b", "b"], 2) == [slice(0, 2), slice(2, 4)]
    assert group_slices(["a", "b", "b", "b"], 2) is None  # a group mixes tasks: not GRPO's layout
    assert group_slices(["a", "a", "a"], 2) is None


def test_memory_prefers_mixed_then_unseen_and_cools_uniform_tasks():
    memory = TaskMemory(list("abcdef"), cooldown=3, seed=0)
    memory.record("a", [1.0, 1.0], step=0)  # uniform
    memory.record("b", [0.0, 1.0], step=0)  # mixed
    memory.record("c", [0.0, 0.0], step=0)  # uniform
    assert memory.cooling("a", 2) and not memory.cooling("a", 3) and not memory.cooling("b", 0)
    picks = memory.replacements(6, step=1)
    assert picks[0] == "b" and set(picks[1:4]) == set("def") and set(picks[4:]) == {"a", "c"}
    assert memory.replacements(2, step=1, exclude={"b"}) == picks[1:3]
    assert memory.replacements(9, step=1) == picks  # never more than the pool
    assert memory.replacements(6, step=1) == picks  # deterministic in (seed, step, salt)
    restored = TaskMemory(list("abcdef"), cooldown=3, seed=0)
    restored.load_state_dict(memory.state_dict())
    assert restored.replacements(6, step=1) == picks
    assert memory.stats() == {"tasks_seen": 3.0, "tasks_mixed": 1.0, "tasks_uniform_pass": 1.0,
                              "tasks_uniform_fail": 1.0}
    with pytest.raises(ValueError, match="cooldown"):
        TaskMemory(["a"], cooldown=-1)


torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from seal_helpers import ScriptedPolicy, cpu_args, small_model  # noqa: E402


class TaskScriptedPolicy(ScriptedPolicy):
    """Mixed outcomes (oracle at even pool positions, give up at odd ones) on ``mixed`` tasks only;
    every other task is given up by every episode (a uniform group)."""

    def __init__(self, tokenizer, mixed: set[str]):
        super().__init__(tokenizer)
        self.mixed = mixed

    def action(self, env):
        from seal_envs.agents import OracleAgent

        base = env.unwrapped
        pos = self.positions.setdefault(id(env), len(self.positions))
        if base.task.task_id not in self.mixed or pos % 2:
            return self.GIVE_UP
        if not base.steps:
            self.agents[id(env)] = OracleAgent()
        return self.agents[id(env)].act(env, {"user_turn": base.user_turn})


def _trainer(tok, tmp_path, dataset, mixed, **overrides):
    from seal_trl.training.trainer import SEALGRPOTrainer

    args = cpu_args(tmp_path, per_device_train_batch_size=4, num_generations=2, evolution=False,
                    weighting="none", max_steps=3, **overrides)
    policy = TaskScriptedPolicy(tok, mixed)
    trainer = SEALGRPOTrainer(model=small_model(tok), args=args, train_dataset=dataset, processing_class=tok,
                              generate_fn=policy)
    policy.rollout = trainer.seal_rollout
    return trainer


@pytest.mark.slow
def test_dynamic_sampling_replays_uniform_groups_on_mixed_tasks(tok, tmp_path):
    from seal_trl.play.data import make_dataset

    dataset = make_dataset(num_rows=12)
    mixed = set(dataset["task_id"][2:5])  # three one-call tasks out of twelve carry a gradient
    trainer = _trainer(tok, tmp_path, dataset, mixed, resample_uniform_groups=6, skip_uniform_tasks=4)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "seal/sampling/groups_mixed" in h]
    assert len(logs) == 3
    # Every step ends with both groups mixed: uniform groups were replayed on the mixed tasks.
    assert [h["seal/sampling/groups_mixed"] for h in logs] == [1.0, 1.0, 1.0]
    assert sum(h["seal/sampling/replayed_groups"] for h in logs) > 0
    found = {k for k, r in trainer.seal_tasks.records.items() if not r.uniform}
    assert found and found <= mixed  # only the tasks that can carry a gradient came out mixed
    assert "task_memory" in trainer.seal_state_dict()


@pytest.mark.slow
def test_without_sampling_options_groups_stay_uniform(tok, tmp_path):
    from seal_trl.play.data import make_dataset

    dataset = make_dataset(num_rows=12)
    trainer = _trainer(tok, tmp_path, dataset, set())
    assert trainer.seal_tasks is None
    trainer.train()
    assert not any("seal/sampling/groups_mixed" in h for h in trainer.state.log_history)


def test_sampling_options_are_checked(tok, tmp_path):
    with pytest.raises(ValueError, match="curriculum"):
        cpu_args(tmp_path, curriculum=True, resample_uniform_groups=1)
    with pytest.raises(ValueError, match=">= 0"):
        cpu_args(tmp_path, skip_uniform_tasks=-1)
    from datasets import Dataset

    from seal_trl.training.trainer import SEALGRPOTrainer

    bare = Dataset.from_list([{"prompt": [{"role": "user", "content": "hi"}]}] * 4)
    with pytest.raises(ValueError, match="task_id"):
        SEALGRPOTrainer(model=small_model(tok), args=cpu_args(tmp_path, skip_uniform_tasks=2),
                        train_dataset=bare, processing_class=tok)


def test_evaluate_policy_runs_the_model_where_it_is(monkeypatch):
    """After GPU training the final evaluation must not move the model to the CPU (issue 27)."""
    import torch

    import seal_trl.agent.agents
    from seal_trl.agent.policy_eval import evaluate_policy

    seen = {}

    class Recorder:
        def __init__(self, model, tokenizer, **kwargs):
            seen.update(kwargs)
            raise RuntimeError("recorded")

    class OnMeta(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.empty(1, device="meta"))

    monkeypatch.setattr(seal_trl.agent.agents, "HFBatchAgent", Recorder)
    with pytest.raises(RuntimeError, match="recorded"):
        evaluate_policy(OnMeta(), None, "test", 1)
    assert seen["device"] == "meta"


class HintedOnlyPolicy(ScriptedPolicy):
    """Passes with the training surface's hints and gives up without them: learnability 1 everywhere."""

    def action(self, env):
        from seal_envs.agents import OracleAgent

        base = env.unwrapped
        if not base.surface.shows_hints:
            return self.GIVE_UP
        if not base.steps:
            self.agents[id(env)] = OracleAgent()
        return self.agents[id(env)].act(env, {"user_turn": base.user_turn})


@pytest.mark.slow
def test_learnability_curriculum_plays_both_surfaces_per_group_and_weighs_by_the_gap(tok, tmp_path):
    from seal_trl.play.data import make_dataset
    from seal_trl.training.trainer import SEALGRPOTrainer

    with pytest.raises(ValueError, match="needs evolution=True or a surface_preset"):
        cpu_args(tmp_path, curriculum=True, curriculum_mode="learnability", evolution=False)
    args = cpu_args(tmp_path, per_device_train_batch_size=4, num_generations=2, evolution=False, weighting="none",
                    max_steps=2, curriculum=True, curriculum_mode="learnability", surface_preset="observation_lite")
    policy = HintedOnlyPolicy(tok)
    trainer = SEALGRPOTrainer(model=small_model(tok), args=args, train_dataset=make_dataset(num_rows=8),
                              processing_class=tok, generate_fn=policy)
    policy.rollout = trainer.seal_rollout
    trainer.train()
    counts = trainer.seal_coevolution.evolver.pass_counts()
    # each group: one episode each way on the same task; only the hinted ones pass (the oracle may
    # still run out of steps on a long task)
    assert counts and all(c.canonical_n == c.hinted_n > 0 and c.canonical_pass == 0 for c in counts.values())
    assert sum(c.hinted_pass for c in counts.values()) > 0
    weights = trainer.seal_pools["train"].envs[0].unwrapped.task_weights
    task_set = trainer.seal_pools["train"].envs[0].unwrapped.task_set
    solved = [i for i in range(len(task_set)) if counts.get(task_set.task_id(i), (0, 0, 1, 0))[3] == 1]
    assert solved and weights[solved[0]] == pytest.approx(weights.max())  # floor + 1: the largest weight
