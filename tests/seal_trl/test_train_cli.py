"""`seal train` end to end in a subprocess: a run folder that `seal report` reads."""

import json
import subprocess
import sys


def test_seal_train_writes_a_run_folder(tmp_path):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seal_cli", "train", "--out", str(out), "--model", "tiny", "--env",
           "seal/ToolUse-v0", "--steps", "2", "--tasks-per-step", "2", "--num-generations", "2", "--max-new-tokens",
           "16", "--max-turns", "2", "--eval-tasks", "2", "--evolution", "--weighting", "turn",
           "--set", "max_turns=1"]  # --set reaches SEALConfig after the flags: one turn per episode
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "%|" in done.stderr  # progress bars without --quiet (the other run below is --quiet)
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    assert all("success_rate" in m and "surface_version" in m for m in metrics)
    assert any(k.startswith("labels/") for k in metrics[0])
    assert all(m["seal/rollout/turns_max"] == 1 for m in metrics)
    assert (out / "model" / "config.json").exists() and (out / "evolver.json").exists()
    assert (out / "start_model" / "config.json").exists()  # the KL reference of an in-memory model (beta > 0)
    assert json.loads((out / "surface.json").read_text())["version"] == metrics[-1]["surface_version"]
    assert (out / "report" / "success.png").read_bytes()[:4] == b"\x89PNG"
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["before"]["tasks"] == evaluation["after"]["tasks"] == 2
    assert evaluation["difference"] == evaluation["after"]["success"] - evaluation["before"]["success"]
    assert "Held-out evaluation" in (out / "report" / "report.md").read_text()
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)  # the folder is not empty now
    assert again.returncode == 2 and "not empty" in again.stderr and "--overwrite" in again.stderr
    report = subprocess.run([sys.executable, "-m", "seal_cli", "report", str(out), "--out", str(tmp_path / "r")],
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr[-2000:]
    assert (tmp_path / "r" / "report.md").exists()


def test_seal_train_rejects_bad_numbers_fast(tmp_path):
    for flag, value in (("--steps", "0"), ("--steps", "-1"), ("--lr", "0"), ("--lr", "nan"), ("--difficulties", "x"),
                        ("--skip-uniform-tasks", "-2")):
        done = subprocess.run([sys.executable, "-m", "seal_cli", "train", "--out", str(tmp_path / "r"), flag, value],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and flag in done.stderr, (flag, value, done.stderr[-500:])
        assert not (tmp_path / "r").exists()


def test_seal_train_set_names_config_fields_and_checks_values_before_loading(tmp_path):
    for value, fragment in (("nope=1", "not a SEALConfig field"), ("min_scale=-1", "min_scale"), ("weighting", "FIELD=VALUE")):
        done = subprocess.run([sys.executable, "-m", "seal_cli", "train", "--out", str(tmp_path / "r"), "--set", value],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and fragment in done.stderr, (value, done.stderr[-500:])
        assert "Traceback" not in done.stderr
        assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())  # nothing ran


def test_seal_train_defaults_start_from_the_shipped_agent(tmp_path):
    """The defaults (model, env) give a trained-before agent; run with --quiet, which must hide
    every progress bar but no result."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seal_cli", "train", "--out", str(out), "--steps", "1", "--tasks-per-step", "1",
           "--num-generations", "2", "--eval-tasks", "2", "--max-turns", "3", "--threads", "1", "--quiet"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    # --quiet: no bar at all (ours, the Trainer's, transformers' "Writing model shards"), the results still printed
    assert "%|" not in done.stderr and "%|" not in done.stdout, done.stderr[-3000:]
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["settings"]["model"] == "default" and evaluation["settings"]["env"] == "seal/ToolUse-Bank-v0"
    # the shipped agent solves the first held-out task (difficulty 1) before training: it is not a random model
    assert evaluation["before"]["passed_task_ids"][:1] == ["bank/test/d1/100000"]
    assert "held-out test success" in done.stdout
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1]


def test_a_missing_model_is_one_error_line_not_a_traceback(tmp_path):
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for cmd in (["train", "--model", str(tmp_path / "no-model"), "--out", str(tmp_path / "r")],
                ["eval", "seal/ToolUse-Bank-v0", "--agent", f"hf:{tmp_path / 'no-model'}", "--limit", "1"]):
        done = subprocess.run([sys.executable, "-m", "seal_cli", *cmd], capture_output=True, text=True,
                              timeout=300, env=env)
        assert done.returncode == 2, done.stderr[-2000:]
        assert "seal: error: cannot load model" in done.stderr and "Traceback" not in done.stderr


def test_an_unreachable_hub_is_one_error_line_without_the_hub_warning(tmp_path):
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:9"}  # a closed port: refused at once
    env.pop("HF_HUB_VERBOSITY", None)
    done = subprocess.run([sys.executable, "-m", "seal_cli", "eval", "seal/ToolUse-Bank-v0", "--agent",
                           "hf:does/not-exist", "--limit", "1", "--quiet"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 2 and "seal: error: cannot load model 'does/not-exist'" in done.stderr, done.stderr[-2000:]
    assert "thrown while requesting" not in done.stderr and "Traceback" not in done.stderr
