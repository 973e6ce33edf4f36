"""SEALConfig validation and TokenWeigher arithmetic (no training)."""

from __future__ import annotations

import json

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from seal_trl.training.config import SEALConfig  # noqa: E402
from seal_trl.weighting.token_weigher import TokenWeigher, step_tag  # noqa: E402


def config(tmp_path, **kw):
    return SEALConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none",
                      per_device_train_batch_size=2, num_generations=2, **kw)


@pytest.mark.parametrize("kw, match", [
    ({"weighting": "tokens"}, "weighting must be one of"),
    ({"apply_to": "some"}, "apply_to must be one of"),
    ({"tag_source": "x"}, "tag_source"),
    ({"min_scale": 2.0, "max_scale": 1.0}, "min_scale=2.0, max_scale=1.0"),
    ({"min_scale": 0.0}, "min_scale=0.0"),
    ({"renormalize": True, "weighting": "trajectory"}, "renormalize"),
    ({"ema_tag_weights": True, "weighting": "none"}, "ema_tag_weights"),
    ({"max_completion_length": 16, "max_new_tokens_per_step": 32}, r"max_completion_length \(16\)"),
    ({"evolver_fade_threshold": 0.5, "evolver_raise_threshold": 0.4}, "0.5 and 0.4"),
    ({"tag_weights": "{not json"}, "tag_weights"),
    ({"tag_weights": {"pass": -1}}, "positive"),
    ({"max_episode_steps": 0}, "max_episode_steps"),
    ({"loss_type": "luspo"}, "loss_type must be one of"),
])
def test_config_rejects_inconsistent_values(tmp_path, kw, match):
    with pytest.raises(ValueError, match=match):
        config(tmp_path, **kw)


def test_config_parses_json_and_derives_env_kwargs(tmp_path):
    cfg = config(tmp_path, env_kwargs='{"reward_mode": "progress"}', tag_weights='{"format_error": 1.7}',
                 max_episode_steps=5)
    assert cfg.make_env_kwargs() == {"max_steps": 5, "reward_mode": "progress"}
    assert cfg.tag_weights == {"format_error": 1.7}
    assert cfg.evolver_kwargs()["window"] == cfg.evolver_window


def test_evolver_settings_have_one_source(tmp_path):
    """Defaults, help and bounds of the evolver's settings live on Evolver; SEALConfig mirrors them."""
    from dataclasses import fields

    from seal_envs.core.evolver import SETTINGS, Evolver, setting_schema
    from seal_trl.training.config import EVOLVER_FIELDS, SEALConfig

    ours = {f.name: f for f in fields(SEALConfig)}
    for f in fields(Evolver):
        if f.name in SETTINGS:
            mine = ours[EVOLVER_FIELDS[f.name]]
            assert mine.default == f.default and f.metadata["help"] in mine.metadata["help"], f.name
    assert set(setting_schema()["properties"]) == set(SETTINGS) == set(Evolver().state_dict()["config"])
    cfg = config(tmp_path, evolver_window=3, curriculum_ema=0.25)
    assert Evolver(**cfg.evolver_kwargs()).window == 3 and cfg.evolver_kwargs()["curriculum_ema"] == 0.25
    for bad, fragment in (({"evolver_min_episodes": -1}, "min_episodes must be in [0, inf]"),
                          ({"curriculum_ema": 1.5}, "curriculum_ema must be in [0, 1]"),
                          ({"evolver_window": 0}, "window must be in [1, inf]")):
        with pytest.raises(ValueError, match=re.escape(fragment)):
            config(tmp_path, **bad)


def test_cli_choices_come_from_the_modules_that_define_them():
    """A choice list written twice drifts; the CLI reads each from where the value is checked."""
    import argparse

    from seal_cli.args import add_train_arguments
    from seal_envs.core.surface import PRESETS
    from seal_envs.core.weighting import MODES
    from seal_envs.env import REWARD_MODES
    from seal_envs.openai_agent import TOOLS_IN_PROMPT
    from seal_trl.training.algorithms import ALGORITHMS, LOSS_TYPES
    from seal_trl.training.train import RL_TASK_POOLS

    p = argparse.ArgumentParser()
    add_train_arguments(p)
    choices = {a.dest: a.choices for a in p._actions if a.choices is not None}
    assert tuple(choices["loss_type"]) == LOSS_TYPES and tuple(choices["reward_mode"]) == REWARD_MODES
    assert tuple(choices["weighting"]) == tuple(MODES) and tuple(choices["surface"]) == tuple(PRESETS)
    assert tuple(choices["tools_in_prompt"]) == tuple(TOOLS_IN_PROMPT)
    assert sorted(choices["algorithm"]) == sorted(ALGORITHMS)
    assert tuple(choices["rl_tasks"]) == RL_TASK_POOLS
    assert {a["loss_type"] for a in ALGORITHMS.values()} <= set(LOSS_TYPES)


LABELS = [[{"label": "ok", "turn": 0}, {"label": "format_error", "turn": 0}],
          [{"label": "unknown_tool", "turn": 0}]]
# turn index per token: row 0 has turns 0 and 1 separated by env tokens; row 1 one turn plus padding
INDEX = torch.tensor([[0, 0, -1, 1, 1, 1], [0, 0, 0, -1, -1, -1]])


def test_turn_tags_follow_the_official_mapping():
    assert step_tag({"label": "format_error"}) == "empty_turn_model_response"
    assert step_tag({"label": "ok", "abstention": True}) == "correct_abstention"
    assert step_tag({"label": "format_error"}, "label") == "format_error"


def test_modes_and_apply_to():
    adv = torch.tensor([-1.0, 1.0])
    w = TokenWeigher("step").weights(INDEX, LABELS, adv)
    assert w.tolist() == [[1.0, 1.0, 0.0, 1.5, 1.5, 1.5], [2.0, 2.0, 2.0, 0.0, 0.0, 0.0]]
    w = TokenWeigher("trajectory").weights(INDEX, LABELS, adv)
    assert w.tolist() == [[1.25, 1.25, 0.0, 1.25, 1.25, 1.25], [2.0, 2.0, 2.0, 0.0, 0.0, 0.0]]
    w = TokenWeigher("step", apply_to="negative").weights(INDEX, LABELS, adv)
    assert w[1].tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]  # positive advantage: untouched
    w = TokenWeigher("none").weights(INDEX, LABELS, adv)
    assert w.tolist() == (INDEX >= 0).float().tolist()


def test_renormalize_and_budget():
    adv = torch.tensor([-1.0, 1.0])
    w = TokenWeigher("step", renormalize=True).weights(INDEX, LABELS, adv)
    assert float(w[0][INDEX[0] >= 0].mean()) == pytest.approx(1.0)
    w = TokenWeigher("trajectory", budget_normalize=True).weights(INDEX, LABELS, adv)
    assert float(w.sum()) == pytest.approx(float((INDEX >= 0).sum()))


def test_missing_labels_weigh_one_and_ema_moves_weights():
    w = TokenWeigher("step").weights(INDEX, [[], []], torch.tensor([1.0, 1.0]))
    assert w.tolist() == (INDEX >= 0).float().tolist()
    from seal_trl.weighting.advantage_weights import EMATagWeights

    weigher = TokenWeigher("step", ema=EMATagWeights(alpha=0.5))
    before = weigher.tag_weights["empty_turn_model_response"]
    weigher.observe({"empty_turn_model_response": 3, "pass": 1})
    assert weigher.tag_weights["empty_turn_model_response"] > before
    state = weigher.state_dict()
    other = TokenWeigher("step", ema=EMATagWeights(alpha=0.5))
    other.load_state_dict(state)
    assert other.tag_weights["empty_turn_model_response"] == weigher.tag_weights["empty_turn_model_response"]


def test_observation_lite_is_a_serialisable_setting_that_reaches_training_envs_only(tmp_path):
    import argparse

    import gymnasium as gym

    from seal_envs.core.surface import surface_preset
    from seal_envs import CoEvolution
    from seal_cli.args import add_train_arguments

    cfg = config(tmp_path, surface_preset="observation_lite", dynamic_tag_weights=True, evolution=False)
    saved = json.loads(cfg.to_json_string())
    assert saved["surface_preset"] == "observation_lite" and saved["dynamic_tag_weights"] is True
    with pytest.raises(ValueError, match="surface_preset must be one of"):
        config(tmp_path, surface_preset="full")
    train = gym.make("seal/ToolUse-v0")
    evaluation = gym.make("seal/ToolUse-v0", evaluation=True)
    CoEvolution(evolve_surface=False, surface=surface_preset(cfg.surface_preset)).apply([train, evaluation])
    assert train.unwrapped.surface.preset == "observation_lite"
    assert evaluation.unwrapped.surface.preset == "" and evaluation.unwrapped.surface.frozen
    parser = argparse.ArgumentParser()
    add_train_arguments(parser)
    assert parser.parse_args(["--surface", "observation_lite"]).surface == "observation_lite"
    assert parser.parse_args([]).surface == "canonical"
