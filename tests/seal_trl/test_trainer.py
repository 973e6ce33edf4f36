"""SEALGRPOTrainer end to end on CPU with the tiny model and a scripted env-aware policy."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from seal_helpers import ScriptedPolicy, cpu_args, small_model  # noqa: E402

from seal_envs import StepLabel, official_tag_of_step  # noqa: E402
from seal_trl.play.data import make_dataset  # noqa: E402
from seal_envs.run_folder import SEAL_STATE_FILE  # noqa: E402
from seal_trl.training.trainer import SEALGRPOTrainer  # noqa: E402
from seal_trl.weighting.advantage_weights import OFFICIAL_TAG_WEIGHTS  # noqa: E402


class SpyTrainer(SEALGRPOTrainer):
    """Records every generation batch (before TRL shuffles it) and every loss call."""

    def __init__(self, *args, **kwargs):
        self.spy_generations: list[dict] = []
        self.spy_losses: list[dict] = []
        super().__init__(*args, **kwargs)

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        self.spy_generations.append({
            "prompt_ids": out["prompt_ids"].clone(), "completion_ids": out["completion_ids"].clone(),
            "completion_mask": out["completion_mask"].clone(), "tool_mask": out["tool_mask"].clone(),
            "base": out["seal_base_advantages"].clone(), "advantages": out["advantages"].clone(),
            "labels": [inp["seal_step_labels"] for inp in inputs],
            "official": [inp["seal_official_turn_tags"] for inp in inputs],
            "task_ids": [inp["seal_task_id"] for inp in inputs],
            "rewards": [float(inp["env_reward"]) for inp in inputs],
            "step_index": [inp["seal_step_index"] for inp in inputs],
        })
        return out

    def _compute_loss(self, model, inputs):
        self.spy_losses.append({k: inputs[k].clone() for k in
                                ("prompt_ids", "completion_ids", "advantages", "seal_base_advantages")})
        return super()._compute_loss(model, inputs)


def make_trainer(tok, tmp_path, cls=SpyTrainer, dataset_rows=8, policy=True, **overrides):
    args = cpu_args(tmp_path, **overrides)
    scripted = ScriptedPolicy(tok) if policy else None
    trainer = cls(model=small_model(tok), args=args, train_dataset=make_dataset(num_rows=dataset_rows),
                  processing_class=tok, generate_fn=scripted)
    if scripted is not None:
        scripted.rollout = trainer.seal_rollout
    return trainer, scripted


def expected_turn_weight(mode: str, labels: list[dict], turn: int, official: list[str]) -> float:
    """The weight of a turn's tokens, computed here from the official table (not the trainer's code):
    trajectory mode weighs the episode's official per-user-turn tags, turn mode each step's tag."""
    tags = [official_tag_of_step(StepLabel.from_dict(d)) for d in labels]
    clamp = lambda x: min(max(x, 0.5), 2.0)  # noqa: E731
    if mode == "none":
        return 1.0
    if mode == "trajectory":
        return clamp(sum(OFFICIAL_TAG_WEIGHTS.get(t, 1.0) for t in official) / len(official))
    return clamp(OFFICIAL_TAG_WEIGHTS.get(tags[turn], 1.0))


def expected_advantages(mode: str, gen: dict) -> torch.Tensor:
    batch, width = gen["completion_ids"].shape
    expected = torch.zeros(batch, width)
    for b in range(batch):
        for t, turn in enumerate(gen["step_index"][b]):
            weight = expected_turn_weight(mode, gen["labels"][b], turn, gen["official"][b]) if turn >= 0 else 0.0
            expected[b, t] = gen["base"][b] * weight
    return expected


def find_row(gen: dict, prompt_ids: torch.Tensor, completion_ids: torch.Tensor) -> int:
    for b in range(gen["completion_ids"].size(0)):
        if torch.equal(gen["completion_ids"][b], completion_ids) and torch.equal(gen["prompt_ids"][b], prompt_ids):
            return b
    raise AssertionError("a loss row matches no generated row")


def check_loss_inputs(trainer: SpyTrainer, mode: str) -> None:
    """Every loss call receives base advantage x step weight on model tokens and 0 on env tokens."""
    assert trainer.spy_losses
    for loss in trainer.spy_losses:
        gen = next(g for g in trainer.spy_generations if g["completion_ids"].size(1) == loss["completion_ids"].size(1)
                   and any(torch.equal(g["completion_ids"][b], loss["completion_ids"][0])
                           for b in range(g["completion_ids"].size(0))))
        expected = expected_advantages(mode, gen)
        # the env mask agrees with the turn index: model tokens are exactly those of a turn
        model_tokens = torch.tensor([[int(t >= 0) for t in idx] + [0] * (expected.size(1) - len(idx))
                                     for idx in gen["step_index"]])
        assert torch.equal(model_tokens, (gen["tool_mask"] * gen["completion_mask"]).long())
        for r in range(loss["advantages"].size(0)):
            b = find_row(gen, loss["prompt_ids"][r], loss["completion_ids"][r])
            assert loss["advantages"].shape == loss["completion_ids"].shape
            torch.testing.assert_close(loss["advantages"][r], expected[b], rtol=1e-6, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rloo", "reinforce", "tests_seal_trl_advantage:doubled"])
def test_advantage_fn_replaces_trls_advantages_group_by_group(tok, tmp_path, name, monkeypatch):
    import sys
    import types

    user = types.ModuleType("tests_seal_trl_advantage")  # a user's own function, reached by "module:function"
    user.doubled = lambda rewards: 2.0 * rewards
    monkeypatch.setitem(sys.modules, "tests_seal_trl_advantage", user)
    trainer, _ = make_trainer(tok, tmp_path, weighting="none", advantage_fn=name)
    trainer.train()
    group = trainer.args.num_generations
    for g in trainer.spy_generations:
        for start in range(0, len(g["rewards"]), group):
            r = g["rewards"][start:start + group]
            mean = sum(r) / group
            want = {"rloo": [x - (sum(r) - x) / (group - 1) for x in r], "reinforce": [x - mean for x in r],
                    "tests_seal_trl_advantage:doubled": [2 * x for x in r]}[name]
            torch.testing.assert_close(g["base"][start:start + group], torch.tensor(want))
    assert any(len(set(g["rewards"])) > 1 for g in trainer.spy_generations)  # some group had a gradient
    check_loss_inputs(trainer, "none")  # the loss sees exactly these advantages


def test_advantage_fn_refuses_custom_reward_funcs(tok, tmp_path):
    from seal_trl.play.data import env_reward

    with pytest.raises(ValueError, match="advantage_fn works on the episodes' env rewards"):
        SEALGRPOTrainer(model=small_model(tok), reward_funcs=[env_reward], args=cpu_args(tmp_path, advantage_fn="rloo"),
                        train_dataset=make_dataset(num_rows=4), processing_class=tok)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["none", "trajectory", "step"])
def test_two_steps_per_mode_give_expected_token_advantages(tok, tmp_path, mode):
    trainer, scripted = make_trainer(tok, tmp_path, weighting=mode)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert trainer.state.global_step == 2 and len(trainer.spy_generations) == 2
    check_loss_inputs(trainer, mode)
    # the batches hold the behaviours the test relies on: several labels, mixed rewards, multi-turn episodes
    labels = {d["label"] for g in trainer.spy_generations for row in g["labels"] for d in row}
    assert {"ok", "format_error"} <= labels
    assert any(float(g["base"].abs().sum()) > 0 for g in trainer.spy_generations)
    assert max(max(idx) for g in trainer.spy_generations for idx in g["step_index"]) >= 1
    for g in trainer.spy_generations:  # a GRPO group plays one task; the budget bounds the whole episode
        assert all(g["task_ids"][i] == g["task_ids"][i + 1] for i in range(0, len(g["task_ids"]), 2))
        assert g["completion_ids"].size(1) <= trainer.args.max_completion_length
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert changed, "no parameter changed"
    logged = trainer.state.log_history[0]
    for key in ("seal/success_rate", "seal/surface_version", "seal/label_frac/ok", "seal/weight/ok",
                "seal/rollout/generate_calls", "seal/evolution_events"):
        assert key in logged, key
    # the logged count of batched generate calls is the policy's own count
    assert scripted.calls == sum(h["seal/rollout/generate_calls"] for h in trainer.state.log_history
                                 if "seal/rollout/generate_calls" in h)


def test_weights_apply_once_with_iterations_and_accumulation(tok, tmp_path):
    trainer, _ = make_trainer(tok, tmp_path, weighting="step", num_iterations=2, gradient_accumulation_steps=2,
                              steps_per_generation=2, max_steps=2, per_device_train_batch_size=2)
    trainer.train()
    # one generation batch served 2 slices x 2 iterations = 4 loss calls
    assert len(trainer.spy_generations) == 1 and len(trainer.spy_losses) == 4
    check_loss_inputs(trainer, "step")
    gen = trainer.spy_generations[0]
    torch.testing.assert_close(gen["advantages"], expected_advantages("step", gen), rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_checkpoint_resume_restores_surface_and_evolver(tok, tmp_path):
    common = dict(weighting="trajectory", evolver_raise_threshold=0.2, evolver_fade_threshold=0.0, max_steps=3,
                  save_strategy="steps", save_steps=2)
    full, _ = make_trainer(tok, tmp_path / "full", cls=SEALGRPOTrainer, **common)
    full.train()
    assert full.seal_coevolution.surface.version > 0, "the scripted policy's format errors should patch the surface"
    ckpt = tmp_path / "full" / "out" / "checkpoint-2"
    state = json.loads((ckpt / SEAL_STATE_FILE).read_text())
    assert state["coevolution"]["evolver"]["updates"] == 2

    resumed, _ = make_trainer(tok, tmp_path / "resumed", cls=SEALGRPOTrainer, **common)
    resumed.train(resume_from_checkpoint=str(ckpt))
    assert resumed.state.global_step == 3
    assert resumed.seal_coevolution.surface == full.seal_coevolution.surface
    assert resumed.seal_coevolution.evolver.state_dict() == full.seal_coevolution.evolver.state_dict()


@pytest.mark.slow
def test_peft_lora_takes_a_step(tok, tmp_path):
    peft = pytest.importorskip("peft")
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    args = cpu_args(tmp_path, max_steps=1)
    scripted = ScriptedPolicy(tok)
    trainer = SEALGRPOTrainer(model=small_model(tok), args=args, train_dataset=make_dataset(num_rows=8),
                              processing_class=tok, peft_config=config, generate_fn=scripted)
    scripted.rollout = trainer.seal_rollout
    lora = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lora_B" in n}
    assert lora
    trainer.train()
    assert trainer.state.global_step == 1
    assert any(not torch.equal(lora[n], p.detach()) for n, p in trainer.model.named_parameters() if n in lora)


def test_trainer_samples_with_its_own_model_and_evaluates_on_canonical_envs(tok, tmp_path):
    trainer, _ = make_trainer(tok, tmp_path, policy=False, max_steps=1, max_episode_steps=2, max_new_tokens_per_step=8,
                              max_completion_length=48, per_device_train_batch_size=2, per_device_eval_batch_size=2)
    trainer.eval_dataset = make_dataset(split="test", num_rows=1)
    trainer.train()
    assert trainer.state.global_step == 1
    assert trainer.seal_rollout.generate_calls >= 1  # the policy itself sampled through generate
    engine = trainer.seal_rollout.generate.engine  # the KV-cached engine, called per episode
    assert trainer.seal_rollout.keyed and engine.stats["calls"] == trainer.seal_rollout.generate_calls
    assert engine.cached_tokens == 0  # every episode's cache was freed
    metrics = trainer.evaluate()
    assert "eval_seal/success_rate" in metrics
    assert all(env.unwrapped.surface.frozen for env in trainer.seal_pools["eval"].envs)


@pytest.mark.slow
def test_dynamic_tag_weights_move_clear_each_epoch_and_resume_from_checkpoints(tok, tmp_path):
    # 4 tasks, 2 per step: an epoch is 2 steps, so step 3 opens epoch 1 and clears the window
    common = dict(weighting="trajectory", dynamic_tag_weights=True, evolution=False, max_steps=3,
                  save_strategy="steps", save_steps=2, dataset_rows=4)
    full, _ = make_trainer(tok, tmp_path / "full", cls=SEALGRPOTrainer, **common)
    full.train()
    dynamic = full.seal_weigher.dynamic
    assert dynamic.epoch == 1 and sum(c for c, _ in dynamic.window.values()) < sum(c for c, _ in dynamic.total.values())
    assert any(dynamic[t] != OFFICIAL_TAG_WEIGHTS.get(t, 1.0) for t in dynamic.total if t != "pass")
    ckpt = tmp_path / "full" / "out" / "checkpoint-2"
    saved = json.loads((ckpt / SEAL_STATE_FILE).read_text())["weigher"]["dynamic"]
    assert saved["epoch"] == 0 and saved["window"] == saved["total"]  # still the first epoch at step 2
    resumed, _ = make_trainer(tok, tmp_path / "resumed", cls=SEALGRPOTrainer, **common)
    resumed.train(resume_from_checkpoint=str(ckpt))
    assert resumed.seal_weigher.dynamic.state_dict() == dynamic.state_dict()
    logged = [h for h in full.state.log_history if "seal/tag_weight/pass" in h]
    assert len(logged) == 3
