"""`seal train` end to end in a subprocess: a run folder that `seal report` reads."""

import json
import os
import subprocess
import sys

import pytest

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}


@pytest.mark.slow
def test_seal_train_writes_a_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seal_cli", "train", "--out", str(out), "--model", "tiny", "--env",
           "seal/ToolUse-v0", "--steps", "2", "--tasks-per-step", "2", "--num-generations", "2", "--max-new-tokens",
           "16", "--max-episode-steps", "2", "--eval-tasks", "2", "--evolution", "--weighting", "step",
           "--set", "max_episode_steps=1"]  # --set reaches SEALConfig after the flags: one turn per episode
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
    code, err = seal_in_process(cmd[3:], capsys)  # the folder is not empty now
    assert code == 2 and "not empty" in err and "--overwrite" in err
    code, err = seal_in_process(["report", str(out), "--out", str(tmp_path / "r")], capsys)
    assert code == 0, err[-2000:]
    assert (tmp_path / "r" / "report.md").exists()


def seal_in_process(argv, capsys) -> tuple[int, str]:
    """``seal ARGV`` in this process (flag checks need no fresh interpreter): exit status, stderr."""
    from seal_cli.main import main

    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    return code, capsys.readouterr().err


def test_seal_train_rejects_bad_numbers_fast(tmp_path, capsys):
    for flag, value in (("--steps", "0"), ("--steps", "-1"), ("--lr", "0"), ("--lr", "nan"), ("--difficulties", "x"),
                        ("--skip-uniform-tasks", "-2")):
        code, err = seal_in_process(["train", "--out", str(tmp_path / "r"), flag, value], capsys)
        assert code == 2 and flag in err, (flag, value, err[-500:])
        assert not (tmp_path / "r").exists()


def test_seal_train_set_names_config_fields_and_checks_values_before_loading(tmp_path, capsys):
    for value, fragment in (("nope=1", "not a SEALConfig field"), ("min_scale=-1", "min_scale"), ("weighting", "FIELD=VALUE")):
        code, err = seal_in_process(["train", "--out", str(tmp_path / "r"), "--set", value], capsys)
        assert code == 2 and fragment in err, (value, err[-500:])
        assert "Traceback" not in err
        assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())  # nothing ran


@pytest.mark.slow
def test_seal_train_defaults_start_from_the_shipped_agent(tmp_path):
    """The defaults (model, env) give a trained-before agent; run with --quiet, which must hide
    every progress bar but no result."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "seal_cli", "train", "--out", str(out), "--steps", "1", "--tasks-per-step", "1",
           "--num-generations", "2", "--eval-tasks", "2", "--max-episode-steps", "3", "--threads", "1", "--quiet"]
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


@pytest.mark.slow
def test_a_missing_model_is_one_error_line_not_a_traceback(tmp_path):
    import os

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for cmd in (["train", "--model", str(tmp_path / "no-model"), "--out", str(tmp_path / "r")],
                ["eval", "seal/ToolUse-Bank-v0", "--agent", f"hf:{tmp_path / 'no-model'}", "--limit", "1"]):
        done = subprocess.run([sys.executable, "-m", "seal_cli", *cmd], capture_output=True, text=True,
                              timeout=300, env=env)
        assert done.returncode == 2, done.stderr[-2000:]
        assert "seal: error: cannot load model" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_an_unreachable_hub_is_one_error_line_at_once_and_a_cached_model_still_loads(tmp_path):
    """Without a hub the hub client retries for about 50 s; the loader asks once, then reads the
    local cache only: an id not in it is one error line within seconds, a cached one loads."""
    import os
    import time

    from seal_trl.agent.tiny import load_model_and_tokenizer

    cache = tmp_path / "hub"
    snapshot = cache / "models--someone--cached-model" / "snapshots" / ("0" * 40)
    model, tokenizer = load_model_and_tokenizer("tiny")
    model.save_pretrained(snapshot)
    tokenizer.save_pretrained(snapshot)
    (cache / "models--someone--cached-model" / "refs").mkdir()
    (cache / "models--someone--cached-model" / "refs" / "main").write_text("0" * 40)
    env = {**os.environ, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_CACHE": str(cache)}
    env.pop("HF_HUB_VERBOSITY", None)  # a closed port: refused at once
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "seal_cli", "eval", "seal/ToolUse-Bank-v0", "--agent",
                           "hf:does/not-exist", "--limit", "1", "--quiet"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 2 and "seal: error: cannot load model 'does/not-exist'" in done.stderr, done.stderr[-2000:]
    assert "cannot be reached" in done.stderr and "127.0.0.1:9" in done.stderr
    assert "thrown while requesting" not in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - start < 40  # the hub client's own retries take about 50 s
    done = subprocess.run([sys.executable, "-m", "seal_cli", "eval", "seal/ToolUse-Bank-v0", "--agent",
                           "hf:someone/cached-model", "--limit", "1", "--max-steps", "1", "--max-new-tokens", "4",
                           "--quiet"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_hub_probe_tells_a_refused_connection_from_a_hub_that_answers(monkeypatch):
    import http.server
    import threading

    from huggingface_hub import constants

    from seal_trl.agent.tiny import hub_unreachable

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    assert "127.0.0.1:9" in hub_unreachable()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # answers 501
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
        assert hub_unreachable() is None  # any answer, even an error status, is a reachable hub
    finally:
        server.shutdown()
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert hub_unreachable() is None  # offline mode asks nothing


def test_config_file_and_sealconfig_field_flags(tmp_path):
    """--config YAML < command-line flags; every SEALConfig field is a flag (TRL's parser); the
    file's fields < --FIELD flags < --set; bad input is one error line (issue 18)."""
    from seal_cli.main import _parse, build_parser, main
    from seal_trl.training.train import seal_config

    run = tmp_path / "run.yaml"
    run.write_text("steps: 3\ndifficulties: [2, 4]\nevolution: true\nreport_to: tensorboard\n"
                   "weight_decay: 0.2\ntag_weights: {ok: 0.5}\nlora_r: 4\n")
    parser = build_parser()
    args, _ = _parse(parser, ["train", "--config", str(run), "--steps", "5", "--weight_decay", "0.01",
                              "--warmup-steps", "2", "--set", 'tag_weights={"ok": 0.1}'])
    assert (args.steps, args.difficulties, args.evolution, args.lora_r) == (5, (2, 4), True, 4)
    config = seal_config(args)
    assert (config.max_steps, config.weight_decay, config.warmup_steps) == (5, 0.01, 2)
    assert config.tag_weights == {"ok": 0.1} and config.report_to == ["tensorboard"] and config.evolution
    assert seal_config(_parse(parser, ["train", "--config", str(run)])[0]).weight_decay == 0.2
    for argv, fragment in ((["--bogus", "1"], "unrecognized arguments: --bogus"),
                           (["--warmup_steps", "x"], "invalid float value"),
                           (["--config", str(tmp_path / "none.yaml")], "cannot be read"),
                           (["--report-to", "wandb"], "wandb: not installed"),
                           (["--use-vllm"], "vllm is not installed")):
        with pytest.raises((ValueError, SystemExit)) as e:
            args, _ = _parse(parser, ["train", *argv])
            seal_config(args)
        assert fragment in str(e.value), (argv, e.value)
    assert main(["train", "--out", str(tmp_path / "r"), "--bogus", "1"]) == 2
    with pytest.raises(SystemExit):
        _parse(parser, ["envs", "--bogus"])  # only `seal train` takes SEALConfig fields


def test_algorithm_flag_sets_its_fields_and_set_wins(tmp_path, capsys):
    from seal_cli.main import _parse, build_parser, main
    from seal_trl.training.train import seal_config

    parser = build_parser()
    config = seal_config(_parse(parser, ["train", "--algorithm", "dr_grpo", "--loss-type", "grpo"])[0])
    assert (config.loss_type, config.scale_rewards, config.weighting) == ("dr_grpo", "none", "none")
    config = seal_config(_parse(parser, ["train", "--algorithm", "rloo", "--set", "weighting=step"])[0])
    assert (config.advantage_fn, config.weighting) == ("rloo", "step")
    with pytest.raises(SystemExit) as e:
        main(["train", "--out", str(tmp_path / "r"), "--algorithm", "ppo"])
    assert e.value.code == 2 and "invalid choice: 'ppo'" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path / "r"), "--set", "advantage_fn=nowhere:f"]) == 2
    assert "advantage_fn 'nowhere:f'" in capsys.readouterr().err


@pytest.mark.slow
def test_report_to_tensorboard_and_lora_in_a_real_run(tmp_path):
    """report_to reaches TRL (a TensorBoard event file is written) and --lora-r trains adapters only."""
    pytest.importorskip("tensorboard")
    out = tmp_path / "run"
    config = tmp_path / "run.yaml"
    config.write_text("model: tiny\nsteps: 1\ntasks_per_step: 1\nnum_generations: 2\nmax_episode_steps: 2\n"
                      "max_new_tokens: 8\neval_tasks: 0\nreport_to: tensorboard\nlora_r: 4\nquiet: true\n")
    done = subprocess.run([sys.executable, "-m", "seal_cli", "train", "--config", str(config), "--out", str(out)],
                          capture_output=True, text=True, env=ENV, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    events = list(tmp_path.rglob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0, sorted(str(p) for p in tmp_path.rglob("*"))
    assert (out / "model" / "adapter_config.json").is_file()  # peft saved the adapters, not a full model


def test_curriculum_flag_names_its_mode():
    from seal_cli.main import _parse, build_parser
    from seal_trl.training.train import seal_config

    parser = build_parser()
    plain = seal_config(_parse(parser, ["train"])[0])
    assert (plain.curriculum, plain.curriculum_mode) == (False, "bucket")
    pool = ["--rl-tasks", "train", "--difficulties", "1,2,3,4"]  # the env's train split, which it samples from
    bucket = seal_config(_parse(parser, ["train", "--curriculum", "--steps", "3", *pool])[0])
    assert (bucket.curriculum, bucket.curriculum_mode, bucket.max_steps) == (True, "bucket", 3)
    hinted = seal_config(_parse(parser, ["train", "--curriculum", "learnability", "--evolution", *pool])[0])
    assert (hinted.curriculum, hinted.curriculum_mode) == (True, "learnability")
    with pytest.raises(ValueError, match="needs evolution=True"):
        seal_config(_parse(parser, ["train", "--curriculum", "learnability", *pool])[0])
    with pytest.raises(ValueError, match="add --rl-tasks train --difficulties 1,2,3,4"):
        seal_config(_parse(parser, ["train", "--curriculum"])[0])  # the recipe's fresh d2-3 tasks
