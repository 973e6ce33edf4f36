"""seal show / play / eval with --server and --tasks (subprocesses, as a user runs them)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

ROOT = Path(__file__).resolve().parents[2]
SERVER = f"{sys.executable} {ROOT / 'examples' / 'mcp_tickets' / 'server.py'}"
TASKS = str(ROOT / "examples" / "mcp_tickets" / "tasks.jsonl")
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def seal(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "seal_cli", *args], capture_output=True, text=True, env=ENV,
                          input=stdin, timeout=180)


@pytest.mark.slow
def test_eval_show_and_play_take_a_server_and_a_task_file():
    out = seal("eval", "--server", SERVER, "--tasks", TASKS, "--agent", "oracle", "--split", "ood", "--batch-size", "1",
               "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["success_rate"] == 1.0 and summary["episodes"] == 2, summary
    out = seal("show", "two-turn-triage", "--server", SERVER, "--tasks", TASKS, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["task_id"] == "two-turn-triage"
    actions = '{"name": "assign_ticket", "arguments": {"ticket_id": "T-102", "assignee": "chen"}}\nDone.\n'
    out = seal("play", "--server", SERVER, "--tasks", TASKS, "--task-id", "assign-reset-email", stdin=actions)
    assert out.returncode == 0 and "verdict: PASS" in out.stdout, out.stdout + out.stderr


def test_a_bad_server_or_task_file_is_one_error_line():
    out = seal("eval", "--server", f"{sys.executable} /no/such/server.py", "--tasks", TASKS, "--agent", "oracle")
    assert out.returncode == 2 and "failed to start" in out.stderr and "Traceback" not in out.stderr
    out = seal("eval", "seal/ToolUse-v0", "--server", SERVER, "--tasks", TASKS, "--agent", "oracle")
    assert out.returncode == 2 and "leave out the id" in out.stderr


@pytest.mark.slow
def test_train_takes_a_server_and_a_task_file(tmp_path):
    """seal train on your own tools: the MCP env's train split for RL, its test split evaluated."""
    out = tmp_path / "run"
    done = seal("train", "--server", SERVER, "--tasks", TASKS, "--model", "tiny", "--out", str(out), "--steps", "1",
                "--tasks-per-step", "2", "--num-generations", "2", "--max-new-tokens", "8", "--max-episode-steps", "2",
                "--eval-tasks", "2", "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "seal/MCP-v0 has a fixed task list: RL uses its train split" in done.stdout
    evaluation = json.loads((out / "evaluation.json").read_text())
    assert evaluation["before"]["tasks"] == evaluation["after"]["tasks"] == 2
    settings = evaluation["settings"]
    assert settings["env"] == "seal/MCP-v0" and settings["env_kwargs"]["tasks"] == TASKS
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [1]
