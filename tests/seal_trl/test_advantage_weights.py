"""Exact-number tests for the diagnosis-guided weighting arithmetic."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from seal_trl.weighting.advantage_weights import (  # noqa: E402
    OFFICIAL_TAG_WEIGHTS,
    EMATagWeights,
    budget_normalize,
    renormalize_mean_one,
    token_weights,
    trajectory_scale,
    step_weights,
)


def test_official_table_is_the_published_one():
    assert dict(OFFICIAL_TAG_WEIGHTS) == {
        "spurious_tool_call": 2.0,
        "correct_abstention": 1.8,
        "empty_turn_model_response": 1.5,
        "state_mismatch": 1.0,
        "response_mismatch": 0.9,
        "instance_mismatch": 0.6,
        "pass": 1.0,
    }


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["spurious_tool_call"], 2.0),
        (["spurious_tool_call", "instance_mismatch"], 1.3),
        (["spurious_tool_call", "correct_abstention"], 1.9),
        (["instance_mismatch"], 0.6),
        (["response_mismatch", "unknown_tag"], 0.95),  # unknown tags weigh 1.0
        (["pass", "pass"], 1.0),
        ([], 1.0),  # no diagnosis, no change
        (["env_error"], 1.0),  # environment faults are never weighted
        (["spurious_tool_call", "env_error", "checker_error"], 2.0),  # ... and left out of the mean
    ],
)
def test_trajectory_scale_official(tags, expected):
    assert trajectory_scale(tags) == pytest.approx(expected, abs=1e-12)


def test_trajectory_scale_clamps():
    table = {"bad": 3.0, "mild": 0.1}
    assert trajectory_scale(["bad"], table) == 2.0
    assert trajectory_scale(["mild"], table) == 0.5
    assert trajectory_scale(["bad"], table, min_scale=0.0, max_scale=5.0) == 3.0
    with pytest.raises(ValueError):
        trajectory_scale(["bad"], table, min_scale=2.0, max_scale=1.0)


def test_turn_weights_all():
    turns = [["spurious_tool_call"], "pass", ["response_mismatch", "instance_mismatch"], None, "env_error"]
    assert step_weights(turns, advantage=-1.0) == pytest.approx([2.0, 1.0, 0.75, 1.0, 1.0], abs=1e-12)
    assert step_weights(turns, advantage=+1.0) == pytest.approx([2.0, 1.0, 0.75, 1.0, 1.0], abs=1e-12)


def test_turn_weights_sign_filter():
    turns = ["spurious_tool_call", "instance_mismatch"]
    assert step_weights(turns, -0.5, apply_to="negative") == [2.0, 0.6]
    assert step_weights(turns, +0.5, apply_to="negative") == [1.0, 1.0]
    assert step_weights(turns, +0.5, apply_to="positive") == [2.0, 0.6]
    assert step_weights(turns, -0.5, apply_to="positive") == [1.0, 1.0]
    # a zero advantage matches neither sign
    assert step_weights(turns, 0.0, apply_to="negative") == [1.0, 1.0]
    assert step_weights(turns, 0.0, apply_to="positive") == [1.0, 1.0]
    with pytest.raises(ValueError):
        step_weights(turns, 1.0, apply_to="sometimes")  # type: ignore[arg-type]


def test_turn_weights_clamp_and_custom_table():
    assert step_weights(["x", "y"], -1.0, {"x": 4.0, "y": 0.25}) == [2.0, 0.5]


def test_token_weights_expands_and_zeroes_env_tokens():
    index = torch.tensor([[0, 0, -1, 1, 1, -1], [0, -1, -1, -1, -1, -1]])
    out = token_weights(index, [[2.0, 0.5], [1.5]])
    assert out.dtype == torch.float32
    assert torch.equal(out, torch.tensor([[2.0, 2.0, 0.0, 0.5, 0.5, 0.0], [1.5, 0.0, 0.0, 0.0, 0.0, 0.0]]))


def test_token_weights_validates():
    with pytest.raises(ValueError):
        token_weights(torch.tensor([[0, 2]]), [[1.0, 1.0]])  # turn 2 has no weight
    with pytest.raises(ValueError):
        token_weights(torch.tensor([[0, 1]]), [[1.0, 1.0], [1.0]])  # batch mismatch
    with pytest.raises(ValueError):
        token_weights(torch.tensor([0, 1]), [[1.0, 1.0]])  # not [B, T]
    # a sequence without any model token is fine
    assert torch.equal(token_weights(torch.tensor([[-1, -1]]), [[]]), torch.zeros(1, 2))


def test_renormalize_mean_one_per_sequence():
    w = torch.tensor([[3.0, 3.0, 0.0, 1.0, 1.0, 0.0], [1.5, 0.0, 0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0, 1, 1, 0], [1, 0, 0, 0, 0, 0]])
    out = renormalize_mean_one(w, mask)
    assert torch.equal(out, torch.tensor([[1.5, 1.5, 0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]]))
    assert torch.equal((out * mask).sum(-1), mask.sum(-1).float())


def test_renormalize_mean_one_whole_batch_and_degenerate_rows():
    w = torch.tensor([[3.0, 1.0], [2.0, 2.0]])
    assert torch.equal(renormalize_mean_one(w, per_sequence=False), torch.tensor([[1.5, 0.5], [1.0, 1.0]]))
    # a row without model tokens is unchanged (no division by zero)
    w2 = torch.tensor([[2.0, 2.0], [0.0, 0.0]])
    m2 = torch.tensor([[1, 1], [0, 0]])
    assert torch.equal(renormalize_mean_one(w2, m2), torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
    # 1-D input: the whole vector
    assert torch.equal(renormalize_mean_one(torch.tensor([1.0, 3.0])), torch.tensor([0.5, 1.5]))


def test_budget_normalize_sum_equals_token_count():
    w = torch.tensor([[2.0, 2.0, 0.0, 2.0, 2.0, 0.0], [2.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0, 1, 1, 0], [1, 0, 0, 0, 0, 0]])
    out = budget_normalize(w, mask)
    assert torch.equal(out, w * 0.5)  # 5 tokens, weight sum 10
    assert float((out * mask).sum()) == 5.0
    # relative weights between trajectories are kept: only the total is fixed
    w3 = torch.tensor([[3.0, 3.0], [1.0, 1.0]])
    out3 = budget_normalize(w3, torch.ones(2, 2))
    assert torch.equal(out3, torch.tensor([[1.5, 1.5], [0.5, 0.5]]))


def test_budget_normalize_uses_reduced_totals():
    w = torch.tensor([[2.0, 2.0, 2.0, 2.0, 2.0]])
    mask = torch.ones(1, 5)
    # another rank contributes 7 tokens with weight sum 6: factor = (5 + 7) / (10 + 6) = 0.75
    out = budget_normalize(w, mask, reduce_fn=lambda t: t + torch.tensor([7.0, 6.0]))
    assert torch.equal(out, torch.full((1, 5), 1.5))
    assert torch.equal(budget_normalize(torch.zeros(1, 2), torch.ones(1, 2)), torch.zeros(1, 2))


def test_ema_tag_weights_rule():
    ema = EMATagWeights(alpha=0.5, strength=1.0)
    assert ema["spurious_tool_call"] == 2.0  # before any update: the base table
    assert ema["response_mismatch"] == 0.9
    assert ema.frequency("response_mismatch") == 0.0

    ema.update(["spurious_tool_call", "pass", "pass", "env_error", "response_mismatch"])
    # env_error dropped -> 4 labels; p = 1/4, 2/4, 1/4; ema = 0.5 * p; bias correction / 0.5
    assert ema.ema == {"pass": 0.25, "response_mismatch": 0.125, "spurious_tool_call": 0.125}
    assert ema.frequency("response_mismatch") == 0.25
    assert ema["response_mismatch"] == pytest.approx(0.9 * 1.25, abs=1e-12)
    assert ema["spurious_tool_call"] == 2.0  # 2.5 clamped
    assert ema["pass"] == 1.0  # neutral tags keep their base weight
    assert ema["instance_mismatch"] == 0.6  # never observed
    assert ema["env_error"] == 1.0
    assert ema["brand_new_tag"] == 1.0

    ema.update([["response_mismatch"]])
    # unobserved tags decay: ema = 0.5 * old; response: 0.5 * 0.125 + 0.5 * 1 = 0.5625; correction / 0.75
    assert ema.ema == {"pass": 0.125, "response_mismatch": 0.5625, "spurious_tool_call": 0.0625}
    assert ema.frequency("response_mismatch") == pytest.approx(0.75, abs=1e-12)
    assert ema["response_mismatch"] == pytest.approx(0.9 * 1.75, abs=1e-12)
    assert ema.num_updates == 2


def test_ema_tag_weights_counts_and_mapping_use():
    a = EMATagWeights(alpha=0.5)
    b = EMATagWeights(alpha=0.5)
    a.update(["instance_mismatch", "pass"])
    b.update_counts({"instance_mismatch": 1, "pass": 1}, 2)
    assert a.weights() == b.weights()
    assert a["instance_mismatch"] == pytest.approx(0.6 * 1.5, abs=1e-12)
    # usable as a tag table
    assert trajectory_scale(["instance_mismatch", "pass"], a) == pytest.approx((0.9 + 1.0) / 2, abs=1e-12)
    assert "pass" in a and "unknown" not in a
    assert list(a) == sorted(OFFICIAL_TAG_WEIGHTS)


def test_ema_tag_weights_state_roundtrip_and_determinism():
    a = EMATagWeights(alpha=0.2, strength=0.5)
    for batch in (["spurious_tool_call", "pass"], ["response_mismatch"], ["pass", "pass", "state_mismatch"]):
        a.update(batch)
    state = json.loads(json.dumps(a.state_dict()))  # JSON-serialisable
    b = EMATagWeights()
    b.load_state_dict(state)
    assert b.weights() == a.weights()
    assert b.state_dict() == a.state_dict()
    a.update(["spurious_tool_call"])
    b.update(["spurious_tool_call"])
    assert b.weights() == a.weights()


def test_ema_validates():
    with pytest.raises(ValueError):
        EMATagWeights(alpha=0.0)
    with pytest.raises(ValueError):
        EMATagWeights(min_scale=3.0, max_scale=1.0)
