"""The paper's A-Patch pieces: the trajectory scale over official per-user-turn tags, and the
official dynamic tag weights (numbers worked out by hand from the rule in SEAL-OFFICIAL.md)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from seal_trl.weighting.token_weigher import TokenWeigher  # noqa: E402
from seal_trl.weighting.advantage_weights import OFFICIAL_TAG_WEIGHTS, OfficialDynamicTagWeights  # noqa: E402


def test_dynamic_weights_first_update_by_hand():
    dyn = OfficialDynamicTagWeights()
    counts, rewards = dyn.trajectory_stats([(["pass", "state_mismatch"], 0.0), (["pass", "pass"], 1.0)])
    assert counts == {"pass": 3, "state_mismatch": 1} and rewards == {"pass": 2.0, "state_mismatch": 0.0}
    dyn.observe(counts, rewards, epoch=0)
    w = dyn.update()
    # state_mismatch: prevalence 1/4, stagnation 1 - 0, confidence 1/32 -> target 1 + 1/128
    assert w["state_mismatch"] == pytest.approx(0.75 * 1.0 + 0.25 * (1 + 1 / 128), abs=1e-15)
    assert w["pass"] == 1.0  # pass targets its base weight
    assert w["spurious_tool_call"] == 2.0 and w["instance_mismatch"] == 0.6  # unseen: base x (1 + 0)
    assert dyn["state_mismatch"] == w["state_mismatch"] and dyn["never_seen"] == 1.0


def test_dynamic_weights_confidence_clamp_exclusions_and_ema():
    dyn = OfficialDynamicTagWeights(ema_beta=0.5, confidence_samples=2)
    # 4 occurrences of empty_turn (all reward 0), 4 of pass; checker_error is not counted in prevalence
    dyn.observe({"empty_turn_model_response": 4, "pass": 4, "checker_error": 3},
                {"empty_turn_model_response": 0.0, "pass": 2.0, "checker_error": 0.0})
    w = dyn.update()
    target = 1.5 * (1 + 1.0 * (4 / 8) * 1.0 * 1.0)  # 2.25, clamped to 2.0
    assert w["empty_turn_model_response"] == pytest.approx(0.5 * 1.5 + 0.5 * min(target, 2.0))
    assert w["checker_error"] == 1.0  # base 1.0 (not in the table), target 1.0
    second = dyn.update()  # same window, one more EMA step from the previous weight
    assert second["empty_turn_model_response"] == pytest.approx(0.5 * w["empty_turn_model_response"] + 0.5 * 2.0)


def test_dynamic_window_clears_when_the_epoch_changes_and_total_serves_empty_windows():
    dyn = OfficialDynamicTagWeights()
    dyn.observe({"state_mismatch": 10}, {"state_mismatch": 0.0}, epoch=0)
    dyn.observe({"pass": 10}, {"pass": 10.0}, epoch=0)
    assert dyn.window["state_mismatch"] == [10.0, 0.0]
    dyn.observe({"pass": 2}, {"pass": 2.0}, epoch=1)
    assert dyn.window == {"pass": [2.0, 2.0]}
    assert dyn.total["pass"] == [12.0, 12.0] and dyn.total["state_mismatch"] == [10.0, 0.0]
    dyn.window = {}
    w = dyn.update()  # an empty window: the totals serve
    assert w["state_mismatch"] > 1.0


def test_dynamic_state_round_trips_through_json():
    dyn = OfficialDynamicTagWeights()
    dyn.observe({"response_mismatch": 5, "pass": 3}, {"response_mismatch": 1.0, "pass": 3.0}, epoch=2)
    dyn.update()
    other = OfficialDynamicTagWeights(ema_beta=0.9)
    other.load_state_dict(json.loads(json.dumps(dyn.state_dict())))
    assert other.state_dict() == dyn.state_dict()
    assert other["response_mismatch"] == dyn["response_mismatch"] != OFFICIAL_TAG_WEIGHTS["response_mismatch"]


def test_a_batch_without_countable_tags_uses_the_base_weights():
    dyn = OfficialDynamicTagWeights()
    dyn.observe({"state_mismatch": 40}, {"state_mismatch": 0.0})
    moved = dyn.update()["state_mismatch"]
    dyn.window = {"gt_error": [3.0, 0.0]}
    assert dyn.update() == OFFICIAL_TAG_WEIGHTS
    assert dyn.dynamic["state_mismatch"] == moved  # the running weights are kept


def test_trajectory_mode_weighs_official_tags_and_turn_mode_steps():
    labels = [{"label": "ok", "turn": 0}, {"label": "premature_end", "turn": 1}]
    official = ["pass", "empty_turn_model_response", "empty_turn_model_response", "empty_turn_model_response"]
    traj = TokenWeigher("trajectory")
    assert traj.step_weights(labels, 1.0, official) == [1.375, 1.375]  # (1 + 3 x 1.5) / 4
    assert traj.step_weights(labels, 1.0) == [1.25, 1.25]  # no official tags: one tag per step
    assert TokenWeigher("trajectory", tag_source="label").step_weights(labels, 1.0, official) == [1.0, 1.0]
    assert TokenWeigher("step").step_weights(labels, 1.0, official) == [1.0, 1.5]
    counts, rewards = traj.tag_stats([labels], [official], [0.0])
    assert counts == {"pass": 1, "empty_turn_model_response": 3}


def test_dynamic_mode_from_config_and_exclusive_with_ema():
    from types import SimpleNamespace

    args = SimpleNamespace(weighting="trajectory", tag_weights=None, tag_source="official", min_scale=0.5,
                           max_scale=2.0, apply_to="all", renormalize=False, ema_tag_weights=False, ema_alpha=0.1,
                           ema_strength=1.0, budget_normalize=False, dynamic_tag_weights=True, dynamic_ema_beta=0.25,
                           dynamic_prevalence_alpha=1.0, dynamic_confidence_samples=32)
    weigher = TokenWeigher.from_config(args)
    assert weigher.tag_weights is weigher.dynamic
    weigher.observe({"state_mismatch": 32, "pass": 32}, {"state_mismatch": 0.0, "pass": 32.0}, epoch=0)
    assert weigher.dynamic["state_mismatch"] == pytest.approx(0.75 + 0.25 * 1.5)
    assert weigher.step_weights([{"label": "ok"}], 1.0, ["state_mismatch"]) == [pytest.approx(1.125)]
    restored = TokenWeigher.from_config(args)
    restored.load_state_dict(json.loads(json.dumps(weigher.state_dict())))
    assert restored.dynamic.state_dict() == weigher.dynamic.state_dict()
    from seal_trl.weighting.advantage_weights import EMATagWeights

    with pytest.raises(ValueError, match="choose one"):
        TokenWeigher(ema=EMATagWeights(), dynamic=OfficialDynamicTagWeights())
