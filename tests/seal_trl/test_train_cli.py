"""`seal train` end to end in a subprocess: a run folder that `seal report` reads."""

import json
import subprocess
import sys


def test_seal_train_writes_a_run_folder(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seal_trl.cli", "train", "--out", str(out), "--steps", "2", "--batch-size", "4",
           "--num-generations", "2", "--max-new-tokens", "16", "--max-turns", "2"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    assert all("success_rate" in m and "surface_version" in m for m in metrics)
    assert any(k.startswith("labels/") for k in metrics[0])
    assert (out / "model" / "config.json").exists() and (out / "evolver.json").exists()
    assert json.loads((out / "surface.json").read_text())["version"] == metrics[-1]["surface_version"]
    assert (out / "report" / "success.png").read_bytes()[:4] == b"\x89PNG"
    report = subprocess.run([sys.executable, "-m", "seal_trl.cli", "report", str(out), "--out", str(tmp_path / "r")],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    assert (tmp_path / "r" / "report.md").exists()
