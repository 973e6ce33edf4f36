"""`seal serve`'s app over OpenEnv's protocol on loopback: real uvicorn, real WebSocket clients."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("openenv.core.env_server", exc_type=ImportError)  # mcp >= 2 (verifiers) breaks its import
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
from websockets.sync.client import connect as ws_connect  # noqa: E402

import seal_envs  # noqa: E402,F401
from seal_envs import CoEvolution  # noqa: E402
from seal_envs.agents import OracleAgent, run_episode  # noqa: E402
from seal_envs.integrations.openenv import SealEnvClient, create_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ENV = "seal/ToolUse-Bank-v0"
MAX_SESSIONS = 8


class Served:
    def __init__(self, **app_kwargs):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(create_app(ENV, **app_kwargs), log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)

    def open_envs(self) -> int:
        return httpx.get(self.url + "/sessions").json()["open_envs"]

    def wait_open_envs(self, n: int, timeout: float) -> int:
        end = time.monotonic() + timeout
        while self.open_envs() != n and time.monotonic() < end:
            time.sleep(0.1)
        return self.open_envs()

    def stop(self):
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def served():
    s = Served(max_sessions=MAX_SESSIONS, idle_timeout_s=None)
    yield s
    s.stop()


def oracle(seed: int):
    _, info, actions = run_episode(gym.make(ENV), OracleAgent(), seed=seed)
    return info, actions


def play(url: str, task_id: str, actions: list[str]):
    with SealEnvClient(base_url=url).sync() as client:
        result = client.reset(task_id=task_id)
        assert result.observation.task_id == task_id and result.observation.tools
        for action in actions:
            assert not result.done
            result = client.step(action)
        return result


def test_an_episode_over_loopback_ends_with_the_record(served):
    info, actions = oracle(3)
    result = play(served.url, info["task_id"], actions)
    assert result.done and result.reward == 1.0
    final = result.observation.final
    assert final["verdict"]["passed"] and final["step_labels"] == info["step_labels"]
    assert CoEvolution.count([final]) == CoEvolution.count([info])
    assert served.wait_open_envs(0, 5) == 0                       # the closed session's env is gone


def test_concurrent_sessions_each_keep_their_own_episode(served):
    episodes = [oracle(seed) for seed in range(MAX_SESSIONS)]
    with ThreadPoolExecutor(MAX_SESSIONS) as pool:
        results = list(pool.map(lambda e: play(served.url, e[0]["task_id"], e[1]), episodes))
    assert [r.observation.final["task_id"] for r in results] == [e[0]["task_id"] for e in episodes]
    assert all(r.reward == 1.0 for r in results)


def test_the_session_limit_refuses_one_more_with_an_error(served):
    clients = [SealEnvClient(base_url=served.url).sync() for _ in range(MAX_SESSIONS)]
    try:
        for c in clients:
            c.connect()
            c.reset(seed=0)
        extra = SealEnvClient(base_url=served.url).sync()
        with pytest.raises(Exception, match="capacity|CAPACITY"):
            extra.connect()
            extra.reset(seed=0)
        clients.pop().close()
        assert served.wait_open_envs(MAX_SESSIONS - 1, 5) == MAX_SESSIONS - 1
        with SealEnvClient(base_url=served.url).sync() as again:
            assert again.reset(seed=1).observation.task_id
    finally:
        for c in clients:
            c.close()


def test_bad_requests_are_errors_the_client_sees_and_the_session_goes_on(served):
    with ws_connect(served.url.replace("http", "ws") + "/ws") as ws:
        def send(message):
            ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.recv(timeout=30))

        assert send("{not json")["data"]["code"] == "INVALID_JSON"
        assert send({"type": "jump"})["data"]["code"] == "UNKNOWN_TYPE"
        assert "reset first" in send({"type": "step", "data": {"message": "hi"}})["data"]["message"]
        assert "not a task id" in send({"type": "reset", "data": {"task_id": "nope"}})["data"]["message"]
        assert "unknown reset field(s) ['taskid']" in send({"type": "reset", "data": {"taskid": "x"}})["data"]["message"]
        assert send({"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        assert send({"type": "step", "data": {"msg": "hi"}})["data"]["code"] == "VALIDATION_ERROR"
        labelled = send({"type": "step", "data": {"message": [1, 2]}})    # a malformed action: a labelled turn
        assert labelled["type"] == "observation"
        assert labelled["data"]["observation"]["step_label"]["label"] == "format_error"
    response = httpx.post(served.url + "/step", json={"action": {"message": "hi"}})
    assert response.status_code == 409 and "WebSocket" in response.json()["detail"]


CLIENT = """
import json, sys, time
from websockets.sync.client import connect
ws = connect(sys.argv[1])
ws.send(json.dumps({"type": "reset", "data": {"seed": 0}})); ws.recv()
ws.send(json.dumps({"type": "step", "data": {"message": "hello"}})); ws.recv()
print("mid-episode", flush=True)
time.sleep(60)
"""


def test_a_client_killed_mid_episode_frees_its_env(served):
    assert served.wait_open_envs(0, 5) == 0
    client = subprocess.Popen([sys.executable, "-c", CLIENT, served.url.replace("http", "ws") + "/ws"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout.readline().strip() == "mid-episode"
        assert served.open_envs() == 1
        client.send_signal(signal.SIGKILL)
        assert served.wait_open_envs(0, 10) == 0
    finally:
        client.kill()
        client.wait()


@pytest.mark.slow
def test_an_idle_session_is_closed_and_its_client_told_why():
    s = Served(max_sessions=1, idle_timeout_s=1.0)      # OpenEnv checks every max(timeout / 4, 5) s
    try:
        with SealEnvClient(base_url=s.url).sync() as client:
            client.reset(seed=0)
            assert s.open_envs() == 1
            assert s.wait_open_envs(0, 12) == 0
            with pytest.raises(RuntimeError, match="idle"):
                client.step("hello")
        with SealEnvClient(base_url=s.url).sync() as client:        # the freed slot takes a new session
            assert client.reset(seed=0).observation.task_id
    finally:
        s.stop()


@pytest.mark.slow
def test_seal_serve_command_serves_until_stopped():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "seal_cli", "serve", ENV, "--port", "0", "--max-sessions", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"serving {ENV} over OpenEnv on http://127.0.0.1:"), proc.stderr.read()
        url = line.split(" on ")[1].split()[0]
        with SealEnvClient(base_url=url).sync() as client:
            assert client.reset(task_id="bank/train/d2/5").observation.task_id == "bank/train/d2/5"
        assert httpx.get(url + "/sessions").json()["max_sessions"] == 2
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
