"""recipes/seal_paper.json: the paper's settings as stated, and the same file run for one step on
CPU with the tiny model (its smoke section)."""

from __future__ import annotations

import json
import pathlib

import pytest

pytest.importorskip("trl")
pytest.importorskip("bfcl_eval")

from seal_trl.training.recipe import Recipe, main, parse_overrides  # noqa: E402

RECIPE = pathlib.Path(__file__).parents[2] / "recipes" / "seal_paper.json"


def test_the_file_states_the_papers_run():
    recipe = Recipe.load(RECIPE)
    c = recipe.config
    assert recipe.model == "Qwen/Qwen3.5-4B" and (recipe.train_split, recipe.eval_split) == ("train", "val")
    assert c["env_id"] == "seal/BFCL-MultiTurn-v0" and c["env_kwargs"]["split_source"] == "seal_run"
    # 32 tasks x 8 samples per rollout batch on 4 processes, 4 optimizer updates of 8 tasks each
    processes = 4
    assert c["per_device_train_batch_size"] * processes * c["steps_per_generation"] == 32 * 8
    assert c["per_device_train_batch_size"] * processes * c["gradient_accumulation_steps"] == 8 * 8
    assert c["max_steps"] == 75 * 4 and c["eval_steps"] == 10 * 4  # 75 rollout batches, val every 10
    assert (c["learning_rate"], c["beta"], c["epsilon"], c["max_grad_norm"], c["temperature"]) == (1e-6, 0.001, 0.2, 1.0, 1.0)
    assert (c["max_episode_steps"], c["env_kwargs"]["max_steps"], c["max_completion_length"]) == (20, 20, 4096)
    assert c["weighting"] == "trajectory" and c["dynamic_tag_weights"] and c["dynamic_ema_beta"] == 0.25
    assert c["surface_preset"] == "observation_lite" and c["evolution"] is False
    assert c["use_vllm"] and c["load_best_model_at_end"] and c["metric_for_best_model"] == "eval_seal/success_rate"
    config = recipe.with_overrides({"bf16": False}).seal_config()  # bf16 needs a GPU to validate
    assert json.loads(config.to_json_string())["surface_preset"] == "observation_lite"


def test_overrides():
    assert parse_overrides(["max_steps=3", "model=tiny", "x=a=b"]) == {"max_steps": 3, "model": "tiny", "x": "a=b"}
    recipe = Recipe.load(RECIPE).with_overrides({"model": "tiny", "max_steps": 2})
    assert recipe.model == "tiny" and recipe.config["max_steps"] == 2
    with pytest.raises(ValueError, match="key=value"):
        parse_overrides(["max_steps"])


@pytest.mark.slow
def test_the_same_file_runs_one_step_on_cpu_with_the_tiny_model(tmp_path):
    trainer = main([str(RECIPE), "--smoke", "--set", f"output_dir={tmp_path}"])
    assert trainer.state.global_step == 1
    assert any("eval_seal/success_rate" in h for h in trainer.state.log_history)  # validated on val
    written = json.loads((tmp_path / "recipe.json").read_text())
    paper = Recipe.load(RECIPE)
    same = {k for k in paper.config if k not in paper.smoke["config"] and k != "report_to"}  # "none" -> []
    assert {k: written["config"][k] for k in same} == {k: paper.config[k] for k in same}
    state = json.loads((tmp_path / "seal_state.json").read_text())
    assert state["weigher"]["dynamic"]["epoch"] == 0 and state["weigher"]["dynamic"]["total"]
    assert json.loads(state["coevolution"]["surface"])["preset"] == "observation_lite"
    assert all(env.unwrapped.surface.preset == "observation_lite" for env in trainer.seal_pools["train"].envs)
    assert all(env.unwrapped.surface.frozen and not env.unwrapped.surface.preset
               for env in trainer.seal_pools["eval"].envs)
    assert (tmp_path / "model").is_dir()
