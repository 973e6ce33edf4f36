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
    from seal_trl.agent.warmstart import WarmStartConfig

    return StudySettings(
        name="micro",
        warmstart=WarmStartConfig(num_tasks=8, max_steps=3, minutes=1.0, hidden_size=32, num_layers=1, num_heads=2,
                                  batch_size=4, warmup_steps=1, difficulties=(1, 2), domains=("bank", "shop")),
        rl=RLConfig(steps=1, tasks_per_step=2, num_generations=2, max_episode_steps=2, max_new_tokens_per_step=12,
                    evolver_min_episodes=2),
        eval=EvalConfig(test_tasks=2, ood_tasks=2, max_new_tokens=12, max_steps=2, batch_size=4),
        seeds=(0,),
    )


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_efficacy_pipeline_writes_results_and_resumes(tmp_path):
    from benchmarks.efficacy.report import plot, summarize
    from benchmarks.efficacy.rl import result_path
    from benchmarks.efficacy.run import run_study

    settings = _micro()
    logs: list[str] = []
    table = run_study(settings, tmp_path, arms=["seal"], seeds=[0], log=logs.append)

    meta = json.loads((tmp_path / "warmstart" / "warmstart.json").read_text())
    assert meta["steps"] == 3 and meta["target_tokens"] > 0
    assert meta["examples"] == 4  # of the first 8 tasks of two domains, 4 have difficulty 1 or 2
    assert meta["config"]["domains"] == ["bank", "shop"]
    assert (tmp_path / "warmstart" / "model" / "config.json").exists()
    warm_eval = json.loads((tmp_path / "warmstart" / "eval.json").read_text())
    assert {"test", "ood"} <= set(warm_eval) and warm_eval["test"]["tasks"] == 2

    path = result_path(tmp_path, "seal", 0)
    result = json.loads(path.read_text())
    assert result["arm"] == "seal" and result["seed"] == 0
    assert result["overrides"] == {"weighting": "step", "evolution": True, "curriculum": False}
    assert result["train"]["steps"] == 1 and result["train"]["episodes"] == 4
    assert result["rl"]["episodes"] == 4
    for key in ("success_rate", "reward", "label_fraction", "surface_events", "surface_version"):
        assert key in result["train"]
    for split in ("test", "ood"):
        e = result["eval"][split]
        assert e["tasks"] == 2 and 0.0 <= e["success"] <= 1.0
        assert set(e["by_domain"]) == {"bank", "shop"}  # the study's domains reach the evaluation
        for key in ("stderr", "progress", "by_difficulty", "label_fraction"):
            assert key in e
    assert "| seal:" in table and "warm start (no RL)" in table
    summary = summarize(tmp_path)
    assert set(summary["arms"]) == {"seal"}
    seal_test = summary["arms"]["seal"]["test"]
    assert seal_test["vs_grpo"] is None  # no stock-GRPO arm in this run
    assert seal_test["vs_warmstart"][0] == pytest.approx(seal_test["mean"] - warm_eval["test"]["success"])
    drawn = plot(tmp_path, tmp_path / "efficacy.png")
    assert drawn["splits"]["test"]["seal"] == [result["eval"]["test"]["success"]]
    assert drawn["train_curves"]["seal"] == result["train"]["success_rate"]
    assert drawn["warmstart"]["test"] == warm_eval["test"]["success"]
    assert drawn["path"] and (tmp_path / "efficacy.png").stat().st_size > 0

    mtime = path.stat().st_mtime_ns
    logs.clear()
    run_study(settings, tmp_path, arms=["seal"], seeds=[0], log=logs.append)
    assert path.stat().st_mtime_ns == mtime
    assert any("skipped" in line for line in logs)
    assert any("cached" in line for line in logs)


@pytest.mark.slow
def test_shared_prefix_loss_equals_full_sequence_loss():
    """The warm start encodes a batch's common system prompt once; loss and gradients must match
    the plain full-sequence forward."""
    import torch

    from seal_trl.agent.warmstart import _batches, _collate, build_examples, oracle_conversations, \
        shared_prefix_loss
    from seal_trl.agent.tiny import build_tiny_model, build_tiny_tokenizer

    tokenizer = build_tiny_tokenizer()
    examples = build_examples(tokenizer, oracle_conversations(15, (1, 2, 3, 4)))
    batches = _batches(examples, 4, __import__("random").Random(0))
    assert sorted(i for b in batches for i in b) == list(range(len(examples)))
    for b in batches:  # every batch shares one system prompt (one domain)
        assert len({tuple(examples[i].ids[: examples[i].prefix_len]) for i in b}) == 1
    idx = max(batches, key=len)
    assert len(idx) >= 2 and len({len(examples[i].ids) for i in idx}) > 1  # padding is exercised
    model = build_tiny_model(tokenizer, hidden_size=32, num_layers=2, num_heads=2, seed=0)
    shared, covered = shared_prefix_loss(model, examples, idx, tokenizer.pad_token_id)
    assert covered == sum(len(examples[i].ids) for i in idx)  # sequence tokens, as if run in full
    shared.backward()
    grad_shared = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    ids, mask, labels = _collate([(examples[i].ids, examples[i].labels) for i in idx], tokenizer.pad_token_id)
    plain = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    plain.backward()
    assert torch.allclose(shared, plain, atol=1e-5)
    for g_s, p in zip(grad_shared, model.parameters()):
        assert torch.allclose(g_s, p.grad, atol=1e-5)
    with pytest.raises(ValueError, match="mixes system prompts"):  # tasks 0 and 1: bank and shop
        shared_prefix_loss(model, examples, [0, 1], tokenizer.pad_token_id)


def test_extra_warmstart_tasks_are_new_seeds_and_skip_held_out_requests(monkeypatch):
    import seal_envs.tasks as tasks
    from seal_trl.agent.warmstart import EXTRA_SEED, extra_conversations

    convs, dropped = extra_conversations(10)
    assert dropped == 0 and len(convs) == 10 and all(c["reward"] == 1.0 for c in convs)
    seeds = [int(c["task_id"].split("/")[-1]) for c in convs]
    assert seeds == list(range(EXTRA_SEED, EXTRA_SEED + 10))
    assert all("/train/" in c["task_id"] for c in convs)
    assert len({c["task_id"].split("/")[0] for c in convs}) == 5  # cycles the train domains

    test_task = tasks.default_task_set("test")[0]
    real = tasks.generate
    monkeypatch.setattr(tasks, "generate", lambda d, seed, diff, split: test_task if seed == EXTRA_SEED
                        else real(d, seed, diff, split))
    convs, dropped = extra_conversations(3)
    assert dropped == 1 and len(convs) == 2 and test_task.task_id not in {c["task_id"] for c in convs}


def test_study_domains_restrict_warm_start_and_rl_tasks():
    from benchmarks.efficacy.rl import rl_dataset
    from seal_trl.agent.warmstart import extra_conversations, oracle_conversations

    convs, _ = extra_conversations(4, domains=("files",))
    assert {c["task_id"].split("/")[0] for c in convs} == {"files"}
    assert {c["task_id"].split("/")[0] for c in oracle_conversations(6, domains=("files",))} == {"files"}
    ds = rl_dataset((1,), ("files",))
    assert len(ds) == 100 and {t.split("/")[0] for t in ds["task_id"]} == {"files"}
    assert {t.split("/")[2] for t in ds["task_id"]} == {"d1"}


def test_difference_of_success_rates_and_its_standard_error():
    from benchmarks.efficacy.report import _delta, difference

    delta, se = difference(0.2, 300, 0.1, 100)
    assert delta == pytest.approx(0.1)
    assert se == pytest.approx(((0.2 * 0.8 / 300) + (0.1 * 0.9 / 100)) ** 0.5)
    assert _delta((delta, se)) == "+10.0 ± 3.8*"  # 10 points is 2.6 SE
    assert _delta(difference(0.12, 300, 0.10, 300)).endswith("2.6")  # 2 points: within noise, no star
    assert _delta(None) == "-"


def test_cli_overrides_apply_to_a_copy_of_the_settings(monkeypatch):
    import benchmarks.efficacy.run as run
    from benchmarks.efficacy.settings import FULL

    seen = {}
    monkeypatch.setattr(run, "run_study", lambda settings, out, *a, **k: seen.update(settings=settings, out=out))
    run.main(["--lr", "1e-4", "--steps", "3", "--temperature", "1.0", "--out", "somewhere"])
    rl = seen["settings"].rl
    assert (rl.lr, rl.steps, rl.temperature) == (1e-4, 3, 1.0) and str(seen["out"]) == "somewhere"
    assert (FULL.rl.lr, FULL.rl.steps) == (5e-4, 6)  # the module's settings are not mutated
