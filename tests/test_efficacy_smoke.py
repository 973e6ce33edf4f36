"""Smoke test of the efficacy study's pipeline on a microscopic setting (benchmarks/efficacy).

Warm start for a few steps on 8 train tasks, one arm with one RL step, evaluation on 2+2 tasks;
then a rerun must skip the finished arm and reuse the cached warm start and its evaluation.
"""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("trl")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def _micro():
    from benchmarks.efficacy.settings import EvalConfig, RLConfig, StudySettings
    from benchmarks.efficacy.warmstart import WarmStartConfig

    return StudySettings(
        name="micro",
        warmstart=WarmStartConfig(num_tasks=8, max_steps=3, minutes=1.0, hidden_size=32, num_layers=1, num_heads=2,
                                  batch_size=4, warmup_steps=1, difficulties=(1, 2)),
        rl=RLConfig(steps=1, tasks_per_step=2, num_generations=2, max_turns=2, max_new_tokens_per_turn=12,
                    evolver_min_episodes=2),
        eval=EvalConfig(test_tasks=2, ood_tasks=2, max_new_tokens=12, max_steps=2, batch_size=4),
        seeds=(0,),
    )


@pytest.mark.timeout(240)
def test_efficacy_pipeline_writes_results_and_resumes(tmp_path):
    from benchmarks.efficacy.report import summarize
    from benchmarks.efficacy.rl import result_path
    from benchmarks.efficacy.run import run_study

    settings = _micro()
    logs: list[str] = []
    table = run_study(settings, tmp_path, arms=["seal"], seeds=[0], log=logs.append)

    meta = json.loads((tmp_path / "warmstart" / "warmstart.json").read_text())
    assert meta["steps"] == 3 and meta["examples"] == 8 and meta["target_tokens"] > 0
    assert (tmp_path / "warmstart" / "model" / "config.json").exists()
    warm_eval = json.loads((tmp_path / "warmstart" / "eval.json").read_text())
    assert {"test", "ood"} <= set(warm_eval) and warm_eval["test"]["tasks"] == 2

    path = result_path(tmp_path, "seal", 0)
    result = json.loads(path.read_text())
    assert result["arm"] == "seal" and result["seed"] == 0
    assert result["overrides"] == {"weighting": "turn", "evolution": True, "curriculum": False}
    assert result["train"]["steps"] == 1 and result["train"]["episodes"] == 4
    assert result["rl"]["episodes"] == 4
    for key in ("success_rate", "reward", "label_fraction", "surface_events", "surface_version"):
        assert key in result["train"]
    for split in ("test", "ood"):
        e = result["eval"][split]
        assert e["tasks"] == 2 and 0.0 <= e["success"] <= 1.0
        for key in ("stderr", "progress", "by_difficulty", "label_fraction"):
            assert key in e
    assert "| seal:" in table and "warm start (no RL)" in table
    assert set(summarize(tmp_path)["arms"]) == {"seal"}

    mtime = path.stat().st_mtime_ns
    logs.clear()
    run_study(settings, tmp_path, arms=["seal"], seeds=[0], log=logs.append)
    assert path.stat().st_mtime_ns == mtime
    assert any("skipped" in line for line in logs)
    assert any("cached" in line for line in logs)
