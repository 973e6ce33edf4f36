"""Your own tools through another framework's API: seal/MCP-v0 played through GEM and SkyRL-Gym,
with the same verdict and record as in-process, and no server process left behind."""

import sys
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("mcp")

import seal_envs  # noqa: E402,F401
from seal_envs import CoEvolution  # noqa: E402
from seal_envs.agents import OracleAgent, run_episode  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MCP = {"server": [sys.executable, str(ROOT / "examples" / "mcp_tickets" / "server.py")],
       "tasks": str(ROOT / "examples" / "mcp_tickets" / "tasks.jsonl")}
TASK = "two-turn-triage"


def oracle_actions() -> tuple[list[str], dict]:
    env = gym.make("seal/MCP-v0", **MCP)
    try:
        _, info, actions = run_episode(env, OracleAgent(), options={"task_id": TASK})
    finally:
        env.close()
    assert info["verdict"]["passed"]
    return actions, info


def children() -> set[int]:
    psutil = pytest.importorskip("psutil")
    return {p.pid for p in psutil.Process().children(recursive=True)}


@pytest.mark.slow
def test_an_mcp_episode_through_gem_passes_with_the_record():
    gem = pytest.importorskip("gem")
    import seal_envs.integrations.gem  # noqa: F401  (registers the seal/ ids with GEM)

    actions, info = oracle_actions()
    before = children()
    env = gem.make("seal/MCP-v0", **MCP)
    _, first = env.reset(task_id=TASK)
    assert first["task_id"] == TASK
    for action in actions:
        _, reward, terminated, truncated, last = env.step(action)
    env.close()
    assert terminated and reward == 1.0 and last["seal"]["verdict"]["passed"]
    assert last["seal"]["step_labels"] == info["step_labels"]
    assert CoEvolution.count([last["seal"]]) == CoEvolution.count([info])
    assert children() <= before  # close() took the server down


@pytest.mark.slow
def test_an_mcp_episode_through_skyrl_gym_passes_with_the_record():
    skyrl_gym = pytest.importorskip("skyrl_gym")
    import seal_envs.integrations.skyrl  # noqa: F401
    from seal_envs.integrations import task_row

    actions, info = oracle_actions()
    row = task_row("seal/MCP-v0", TASK, env_kwargs=MCP)
    env = skyrl_gym.make(row["env_class"], env_config=dict(MCP), extras=row)
    env.init(row["prompt"])
    outputs = [env.step(a) for a in actions]
    env.close()
    assert outputs[-1]["done"] and outputs[-1]["reward"] == 1.0
    assert outputs[-1]["metadata"]["step_labels"] == info["step_labels"]


@pytest.mark.slow
def test_an_mcp_env_served_over_openenv_plays_to_the_verdict():
    pytest.importorskip("openenv.core.env_server", exc_type=ImportError)  # mcp >= 2 (verifiers) breaks its import
    import socket
    import threading
    import time

    import uvicorn

    from seal_envs.integrations.openenv import SealEnvClient, create_app

    actions, info = oracle_actions()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app("seal/MCP-v0", max_sessions=2, **MCP), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        with SealEnvClient(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}").sync() as client:
            result = client.reset(task_id=TASK)
            assert result.observation.task_id == TASK and result.observation.tools
            for action in actions:
                result = client.step(action)
        assert result.done and result.reward == 1.0
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.mark.slow
def test_seal_serve_takes_a_server_and_a_task_file():
    import subprocess

    pytest.importorskip("openenv.core.env_server", exc_type=ImportError)
    cmd = [sys.executable, "-m", "seal_cli", "serve", "--server", " ".join(MCP["server"]), "--tasks", MCP["tasks"],
           "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving seal/MCP-v0 over OpenEnv"), line
    finally:
        proc.terminate()
        proc.wait(30)
