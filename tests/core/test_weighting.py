"""The framework-neutral step weighting (seal_envs.core.weighting): exact numbers, no torch."""

from __future__ import annotations

import numpy as np
import pytest

from seal_envs.core.tag_weights import EMATagWeights
from seal_envs.core.weighting import (
    OFFICIAL_TAG_WEIGHTS,
    WeightingConfig,
    episode_step_weights,
    expand_step_weights,
    token_advantage_weights,
    step_index_from_mask,
)

# turn 0: a call to a tool that does not exist (official spurious_tool_call, 2.0);
# turn 1: fine (pass, 1.0); turn 2: a malformed action (empty_turn_model_response, 1.5)
LABELS = [{"label": "unknown_tool", "turn": 0}, {"label": "ok", "turn": 0}, {"label": "format_error", "turn": 0}]
MASK = [0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 1]  # prompt-side tokens, then three generations with env text between


def test_step_index_from_mask_numbers_each_run_of_model_tokens():
    assert step_index_from_mask(MASK).tolist() == [-1, -1, 0, 0, -1, 1, -1, -1, 2, 2, 2]
    assert step_index_from_mask([]).tolist() == []
    assert step_index_from_mask([1, 1]).tolist() == [0, 0]


def test_turn_mode_weighs_each_turn_by_its_own_tag():
    w = token_advantage_weights(step_index_from_mask(MASK), LABELS, WeightingConfig(mode="step"))
    assert w.dtype == np.float32
    assert w.tolist() == [0, 0, 2.0, 2.0, 0, 1.0, 0, 0, 1.5, 1.5, 1.5]


def test_trajectory_mode_is_one_clamped_mean_scale():
    w = token_advantage_weights(step_index_from_mask(MASK), LABELS)  # the default: trajectory, official tags
    scale = (2.0 + 1.0 + 1.5) / 3
    assert w.tolist() == pytest.approx([0, 0, scale, scale, 0, scale, 0, 0, scale, scale, scale])
    # with the episode's official per-user-turn tags, the mean runs over those instead
    w = token_advantage_weights([0, 0], LABELS[:1], official_turn_tags=["instance_mismatch", "instance_mismatch"])
    assert w.tolist() == pytest.approx([0.6, 0.6])
    w = token_advantage_weights([0], LABELS[:1], official_turn_tags=["x", "x", "x"],
                                config=WeightingConfig(min_scale=1.2))
    assert w.tolist() == pytest.approx([1.2])  # unknown tags weigh 1.0, clamped up to min_scale


def test_none_mode_and_label_tags():
    assert token_advantage_weights([0, -1, 1], LABELS[:2], WeightingConfig(mode="none")).tolist() == [1, 0, 1]
    table = {"unknown_tool": 1.7}
    w = token_advantage_weights([0, 1], LABELS[:2], WeightingConfig(mode="step", tag_source="label", tag_weights=table))
    assert w.tolist() == pytest.approx([1.7, 1.0])


def test_apply_to_needs_and_follows_the_advantage_sign():
    cfg = WeightingConfig(mode="step", apply_to="negative")
    with pytest.raises(ValueError, match="needs the episode's advantage"):
        token_advantage_weights([0], LABELS, cfg)
    assert token_advantage_weights([0], LABELS, cfg, advantage=-0.5).tolist() == [2.0]
    assert token_advantage_weights([0], LABELS, cfg, advantage=0.5).tolist() == [1.0]
    assert token_advantage_weights([0], LABELS, cfg, advantage=0.0).tolist() == [1.0]  # neither sign


def test_renormalize_keeps_the_mean_over_model_tokens_at_one():
    cfg = WeightingConfig(mode="step", renormalize=True)
    index = step_index_from_mask(MASK)
    w = token_advantage_weights(index, LABELS, cfg)
    assert float(w[index >= 0].mean()) == pytest.approx(1.0, abs=1e-6)
    assert (w[index < 0] == 0).all()
    assert w[2] / w[5] == pytest.approx(2.0)  # the credit moves between turns, in proportion


def test_turns_without_labels_weigh_one_and_bad_indices_are_errors():
    assert token_advantage_weights([0, 1, 2], LABELS[:1], WeightingConfig(mode="step")).tolist() == [2.0, 1.0, 1.0]
    with pytest.raises(ValueError, match=">= -1"):
        token_advantage_weights([0, -2], LABELS)
    with pytest.raises(ValueError, match="1-D"):
        token_advantage_weights([[0]], LABELS)
    with pytest.raises(ValueError, match="integers"):
        token_advantage_weights([0.5], LABELS)
    with pytest.raises(ValueError, match="only 1 turn weights"):
        expand_step_weights([0, 1], [1.0])
    assert token_advantage_weights([], LABELS).tolist() == []


def test_moving_tag_tables_plug_in_as_tag_weights():
    ema = EMATagWeights(alpha=0.5)
    ema.update(["spurious_tool_call", "pass"])
    w = token_advantage_weights([0], LABELS[:1], WeightingConfig(mode="step", tag_weights=ema))
    assert w.tolist() == [pytest.approx(min(2.0, OFFICIAL_TAG_WEIGHTS["spurious_tool_call"] * 1.5))]
    assert episode_step_weights(LABELS, WeightingConfig(mode="step", tag_weights=ema)) == [2.0, 1.0, 1.5]


@pytest.mark.parametrize("values, match", [
    ({"mode": "tokens"}, "mode must be one of"),
    ({"apply_to": "some"}, "apply_to must be one of"),
    ({"tag_source": "x"}, "tag_source must be one of"),
    ({"min_scale": 2.0, "max_scale": 1.0}, "min_scale=2.0, max_scale=1.0"),
    ({"renormalize": True}, "renormalize"),
    ({"mode": "step", "weight": 2}, r"unknown weighting option\(s\) \['weight'\]"),
])
def test_config_names_the_bad_value(values, match):
    with pytest.raises(ValueError, match=match):
        WeightingConfig.from_dict(values)
