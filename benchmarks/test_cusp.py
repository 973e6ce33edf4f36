"""The cusp scan: what it counts per snapshot, end to end on two tiny snapshots."""

import json

import pytest

from benchmarks import cusp


def test_summarize_counts_success_by_difficulty_and_mixed_tasks():
    per_task = {"a": (1, [True, True]), "b": (2, [True, False]), "c": (2, [False, False]), "d": (3, [False, True])}
    s = cusp.summarize(per_task)
    assert s["by_difficulty"] == {"1": 1.0, "2": 0.25, "3": 0.5}
    assert s["success"] == pytest.approx((1 + 0.5 + 0 + 0.5) / 4) and s["mixed"] == 0.5


@pytest.mark.slow
def test_scan_of_snapshots_writes_table_and_resumes(tmp_path, capsys):
    pytest.importorskip("torch")
    from seal_trl.agent.warmstart import WarmStartConfig, train_warmstart

    cfg = WarmStartConfig(num_tasks=4, minutes=None, max_steps=2, hidden_size=32, num_layers=1, num_heads=2,
                          batch_size=2, warmup_steps=1, difficulties=(1,), domains=("bank",), bf16=False)
    train_warmstart(cfg, tmp_path / "ws", log=lambda m: None, save_every=1)
    cusp.main([str(tmp_path / "ws" / "steps"), "--tasks", "2", "--samples", "2", "--out", str(tmp_path / "c")])
    results = json.loads((tmp_path / "c" / "cusp.json").read_text())
    assert set(results) == {"1", "2"}
    assert all(0 <= r["sampled"]["success"] <= 1 and set(r["greedy"]["by_difficulty"]) <= {"1", "2"}
               for r in results.values())
    table = (tmp_path / "c" / "cusp.md").read_text()
    assert "| 1 |" in table and "| 2 |" in table
    capsys.readouterr()
    cusp.main([str(tmp_path / "ws" / "steps"), "--tasks", "2", "--out", str(tmp_path / "c")])  # nothing new to run
    assert "step 1:" not in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no step-NNNNN"):
        cusp.snapshots(tmp_path)
