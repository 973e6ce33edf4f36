"""The verl agent loop (verl 0.9.1) playing SEAL episodes with a fake ``server_manager`` backed by
the shipped default agent. verl pins transformers below 5.11, so this runs in its own virtual
environment (.ci/run builds it); elsewhere it is skipped."""

from __future__ import annotations

import asyncio

import pytest

verl = pytest.importorskip("verl.experimental.agent_loop")

from default_agent import ENV_KWARGS, PASSED, StandInChannel, generate, load  # noqa: E402

from seal_envs.testing import fully_patched_surface  # noqa: E402
from seal_envs.core.weighting import WeightingConfig, token_advantage_weights  # noqa: E402


class FakeServerManager:
    """verl's ``server_manager.generate`` answered by the default agent (greedy)."""

    def __init__(self, garbage: bool = False) -> None:
        self.calls = 0
        self.garbage = garbage

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        self.calls += 1
        _, tokenizer = load()
        if self.garbage:  # bytes the env cannot read as a call: a format_error turn, never an exception
            ids = tokenizer('<tool_call>{"name": ', add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        else:
            ids = generate(prompt_ids)
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids))


def make_loop(server, response_length=2048, **kw):
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from seal_envs.integrations.verl import SealAgentLoop

    config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"prompt_length": 4096,
                                                                 "response_length": response_length}},
                               "data": {}})
    _, tokenizer = load()
    return SealAgentLoop(DictConfigWrap(config), server, tokenizer, None, RLHFDataset, DictConfigWrap(config.data),
                         env_kwargs=ENV_KWARGS, **kw)


def run(server, row, **kw):
    """One episode; the loop is built inside the event loop, as verl's worker builds it."""
    async def main():
        return await make_loop(server, **kw).run({"temperature": 0.0}, **row)

    return asyncio.run(main())


def test_the_registered_loop_plays_a_multi_turn_episode_to_a_verdict():
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry

    import seal_envs.integrations.verl  # noqa: F401  (registers the loop)

    assert _agent_loop_registry["seal_agent"]["_target_"] == "seal_envs.integrations.verl.SealAgentLoop"
    task = next(t for t in PASSED if "/d3/" in t)  # several user turns
    server = FakeServerManager()
    out = run(server, {"extra_info": {"task_id": task}, "agent_name": "seal_agent"}, weighting={"mode": "step"})
    record = out.extra_fields["seal"]
    assert record["task_id"] == task and record["verdict"]["passed"] and out.reward_score == 1.0
    assert server.calls == record["steps"] == len(record["step_labels"]) >= 2
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    # the model's own tokens are trained, the env's reply is not: one run of 1s per action
    turns = out.extra_fields["seal_step_index"]
    assert max(turns) == record["steps"] - 1 and 0 in out.response_mask
    weights = out.extra_fields["seal_token_weights"]
    assert weights == token_advantage_weights(turns, record["step_labels"], WeightingConfig(mode="step")).tolist()
    assert all(w == 0 for w, m in zip(weights, out.response_mask) if not m)


def test_bad_model_output_is_a_labelled_turn_and_a_bad_row_a_failed_episode():
    out = run(FakeServerManager(garbage=True), {"task_id": PASSED[0]})
    labels = [lb["label"] for lb in out.extra_fields["seal"]["step_labels"]]
    assert labels and set(labels) == {"format_error"} and out.reward_score == 0.0
    for row in ({"task_id": "bank/test/d9/nope"}, {"seed": -3}, {"env_id": "CartPole-v1"}, {"index": "x"}):
        out = run(FakeServerManager(), row)
        assert out.reward_score == 0.0 and "row_error" in out.extra_fields["seal"], row
        assert out.response_mask == [0]


def test_the_response_budget_ends_the_episode_verified():
    out = run(FakeServerManager(), {"task_id": PASSED[1]}, response_length=40)
    assert len(out.response_ids) <= 40
    assert "verdict" in out.extra_fields["seal"] and not out.extra_fields["seal"]["verdict"]["passed"]


def test_training_envs_show_the_channels_surface_and_the_weights_reach_the_advantages():
    import numpy as np
    import torch
    from verl.protocol import DataProto

    from seal_envs.integrations.verl import apply_seal_weights

    channel = StandInChannel()
    assert channel.publish(fully_patched_surface(["get_balance", "transfer"])) > 0
    train = run(FakeServerManager(), {"split": "train", "index": 0}, surface_channel=channel,
                weighting={"mode": "step"})
    assert channel.reads == 1 and train.extra_fields["seal"]["surface_version"] == channel.surface.version
    evaluation = run(FakeServerManager(), {"task_id": PASSED[0]}, surface_channel=channel)
    assert evaluation.extra_fields["seal"]["surface_version"] == 0  # a test task: the canonical surface

    outs = [train, run(FakeServerManager(garbage=True), {"task_id": PASSED[0]})]
    width = max(len(o.response_ids) for o in outs)
    mask = torch.tensor([o.response_mask + [0] * (width - len(o.response_mask)) for o in outs])
    adv = torch.tensor([[1.0], [-1.0]]) * mask
    data = DataProto.from_dict(tensors={"advantages": adv.clone(), "response_mask": mask},
                               non_tensors={k: np.array([o.extra_fields[k] for o in outs], dtype=object)
                                            for k in ("seal", "seal_step_index", "seal_token_weights")})
    apply_seal_weights(data, {"mode": "step"})
    for b, o in enumerate(outs):
        w = o.extra_fields["seal_token_weights"]
        assert data.batch["advantages"][b, : len(w)].tolist() == pytest.approx((adv[b, : len(w)] * torch.tensor(w)).tolist())
    # apply_to="negative": only the failed episode (negative advantage) is reweighted
    data.batch["advantages"] = adv.clone()
    apply_seal_weights(data, {"mode": "step", "apply_to": "negative"})
    assert data.batch["advantages"][0].tolist() == adv[0].tolist()
    assert data.batch["advantages"][1, : len(outs[1].response_mask)].tolist() == pytest.approx(
        (adv[1, : len(outs[1].response_mask)] * torch.tensor(outs[1].extra_fields["seal_token_weights"])).tolist())


def test_install_weighting_wraps_verls_compute_advantage(monkeypatch):
    import numpy as np
    import torch
    import verl.trainer.ppo.ray_trainer as ray_trainer
    from verl.protocol import DataProto

    from seal_envs.integrations.verl import install_weighting

    monkeypatch.setattr(ray_trainer, "compute_advantage", ray_trainer.compute_advantage)
    install_weighting({"mode": "step"})
    install_weighting({"mode": "step"})  # idempotent: weights apply once
    # (verl's v1 trainer module needs transfer_queue, not installed here; install_weighting patches it where it imports)
    labels = [{"label": "unknown_tool", "turn": 0}, {"label": "ok", "turn": 0}]
    mask = torch.tensor([[1, 1, 0, 1, 0], [1, 1, 0, 1, 0]])
    record = {"step_labels": labels, "official_turn_tags": [], "verdict": {"passed": False}}
    weights = [2.0, 2.0, 0.0, 1.0, 0.0]
    rewards = torch.zeros(2, 5)
    rewards[0, 3] = 1.0  # two samples of one prompt: GRPO advantages +-0.7071
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards, "response_mask": mask},
        non_tensors={"uid": np.array(["a", "a"], dtype=object), "seal": np.array([record, record], dtype=object),
                     "seal_step_index": np.array([[0, 0, -1, 1, -1]] * 2, dtype=object),
                     "seal_token_weights": np.array([weights, weights], dtype=object)})
    out = ray_trainer.compute_advantage(data, adv_estimator="grpo")
    a = 1 / np.sqrt(2)
    want = [a * w for w in weights] + [-a * w for w in weights]
    assert out.batch["advantages"].flatten().tolist() == pytest.approx(want, abs=1e-4)
