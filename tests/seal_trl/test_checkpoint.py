"""The default agent: made by one command with provenance, shipped in the package, still scoring
what its provenance says."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")


@pytest.mark.slow
def test_make_checkpoint_writes_weights_tokenizer_and_provenance(tmp_path, monkeypatch):
    from seal_trl.agent import checkpoint
    from seal_trl.agent.tiny import load_model_and_tokenizer
    from seal_trl.agent.warmstart import WarmStartConfig

    monkeypatch.setattr(checkpoint, "CHECK_TASKS", 4)
    cfg = WarmStartConfig(num_tasks=8, minutes=None, max_steps=3, hidden_size=32, num_layers=1, num_heads=2,
                          batch_size=4, warmup_steps=1, difficulties=(1, 2), domains=("bank",))
    prov = checkpoint.make_default_checkpoint(tmp_path / "ckpt", cfg, eval_tasks=4, command="test", log=lambda m: None)
    saved = json.loads((tmp_path / "ckpt" / "provenance.json").read_text())
    assert saved == prov and prov["command"] == "test" and prov["steps"] == 3
    assert prov["config"]["minutes"] is None and prov["config"]["domains"] == ["bank"]
    assert set(prov["eval"]) == {"test", "ood"} and prov["eval"]["test"]["tasks"] == 4
    assert set(prov["eval"]["test"]["by_difficulty"]) <= {"1", "2", "3", "4"}
    assert prov["check"]["tasks"] == 4 and not (tmp_path / "ckpt" / "_work").exists()
    model, tok = load_model_and_tokenizer(str(tmp_path / "ckpt"))  # the folder is a plain HF checkpoint
    assert sum(p.numel() for p in model.parameters()) == prov["params"]
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False) == "<s><|user|>hi<|end|>"


@pytest.mark.slow
def test_steps_schedule_is_reproducible(tmp_path):
    from seal_trl.agent.warmstart import WarmStartConfig, load_warmstart, train_warmstart

    cfg = WarmStartConfig(num_tasks=6, minutes=None, max_steps=4, hidden_size=32, num_layers=1, num_heads=2,
                          batch_size=3, warmup_steps=1, difficulties=(1,), domains=("bank",), bf16=False)
    states = []
    for k in range(2):
        train_warmstart(cfg, tmp_path / f"w{k}", log=lambda m: None)
        states.append(load_warmstart(tmp_path / f"w{k}")[0].state_dict())
    assert all(torch.equal(states[0][name], states[1][name]) for name in states[0])


def test_snapshots_along_the_schedule_do_not_change_the_training(tmp_path):
    from seal_trl.agent.tiny import load_model_and_tokenizer
    from seal_trl.agent.warmstart import WarmStartConfig, load_warmstart, train_warmstart

    cfg = WarmStartConfig(num_tasks=6, minutes=None, max_steps=4, hidden_size=32, num_layers=1, num_heads=2,
                          batch_size=3, warmup_steps=1, difficulties=(1,), domains=("bank",), bf16=False)
    train_warmstart(cfg, tmp_path / "plain", log=lambda m: None)
    train_warmstart(cfg, tmp_path / "snap", log=lambda m: None, save_every=2)
    snaps = sorted(p.name for p in (tmp_path / "snap" / "steps").iterdir())
    assert snaps == ["step-00002", "step-00004"]
    plain = load_warmstart(tmp_path / "plain")[0].state_dict()
    last = load_model_and_tokenizer(str(tmp_path / "snap" / "steps" / "step-00004"))[0].state_dict()
    mid = load_model_and_tokenizer(str(tmp_path / "snap" / "steps" / "step-00002"))[0].state_dict()
    assert all(torch.equal(plain[k], last[k]) for k in plain)  # the same run, saved along the way
    assert not all(torch.equal(plain[k], mid[k]) for k in plain)
    meta = json.loads((tmp_path / "snap" / "steps" / "step-00002" / "snapshot.json").read_text())
    assert meta["step"] == 2 and meta["of"] == 4


def test_second_schedule_starts_from_the_given_checkpoint(tmp_path):
    import dataclasses

    from seal_trl.agent.warmstart import WarmStartConfig, load_warmstart, train_warmstart

    first = WarmStartConfig(num_tasks=6, minutes=None, max_steps=3, hidden_size=32, num_layers=1, num_heads=2,
                            batch_size=3, warmup_steps=1, difficulties=(1,), domains=("bank",), bf16=False)
    train_warmstart(first, tmp_path / "a", log=lambda m: None)
    second = dataclasses.replace(first, max_steps=1, lr=1e-12, init_from=str(tmp_path / "a" / "model"), seed=5)
    meta = train_warmstart(second, tmp_path / "b", log=lambda m: None)
    assert meta["config"]["init_from"] == str(tmp_path / "a" / "model")
    a, b = load_warmstart(tmp_path / "a")[0].state_dict(), load_warmstart(tmp_path / "b")[0].state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)  # a near-zero step from the first's weights


@pytest.mark.slow
def test_shipped_default_scores_what_its_provenance_says():
    from seal_trl.agent.checkpoint import DEFAULT_CHECKPOINT, evaluate_checkpoint, load_provenance
    from seal_trl.agent.tiny import load_model_and_tokenizer

    prov = load_provenance()
    model, tok = load_model_and_tokenizer("default")
    assert sum(p.numel() for p in model.parameters()) == prov["params"]
    size = sum(f.stat().st_size for f in DEFAULT_CHECKPOINT.iterdir())
    assert size <= 16 * 2**20, f"the shipped checkpoint is {size / 2**20:.1f} MB (limit 16)"
    check = prov["check"]
    torch.set_num_threads(1)
    with torch.no_grad():
        got = evaluate_checkpoint(model.eval(), tok, {check["split"]: check["tasks"]}, log=lambda m: None,
                                  domains=tuple(prov["config"]["domains"]))[check["split"]]
    # Greedy decoding on CPU: the same tasks pass (one flip allowed for float differences across thread counts).
    assert len(set(got["passed_task_ids"]) ^ set(check["passed_task_ids"])) <= 1, (got["passed_task_ids"], check)
