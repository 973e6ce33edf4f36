"""Stepping an env over OpenEnv's protocol on loopback (`seal serve`) against stepping it in-process.

    python benchmarks/bench_serve.py [--env seal/ToolUse-v0] [--episodes 96] [--sessions 1 8 32] [--repeat 2]

The same oracle episodes (seeds 0..N-1, their actions recorded once in-process) are played

- in-process: ``--sessions`` envs (``seal_envs.integrations.make_env``) stepped in turn, one
  action each, as a trainer's batched rollout steps them;
- over loopback: ``seal serve`` in its own process, and ``--sessions`` concurrent WebSocket
  sessions (OpenEnv's async ``EnvClient``, :class:`SealEnvClient`) from one client process,
  each playing its share of the episodes.

Also the server's own work without the transport (``SealEnvironment`` and the JSON of its
observations, in-process), to split the loopback cost into the adapter's and the protocol's.

Steps per second count actions (not resets) over the whole wall time, resets included. Each
setting runs ``--repeat`` times and the best is kept. Prints a Markdown table for
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def oracle_episodes(env_id: str, count: int) -> list[tuple[str, list[str]]]:
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_envs.agents import OracleAgent, run_episode

    env = gym.make(env_id)
    out = []
    for seed in range(count):
        reward, info, actions = run_episode(env, OracleAgent(), seed=seed)
        assert reward == 1.0, info["task_id"]
        out.append((info["task_id"], actions))
    return out


def in_process(env_id: str, episodes: list, sessions: int) -> tuple[float, int]:
    """(seconds, steps): ``sessions`` envs stepped round-robin until every episode is played."""
    from seal_envs.integrations import make_env

    envs = [make_env(env_id) for _ in range(sessions)]
    queue, steps = list(episodes), 0
    running: list = [None] * sessions  # per env: the actions left of its episode
    t0 = time.perf_counter()
    while queue or any(running):
        for i, env in enumerate(envs):
            if not running[i]:
                if not queue:
                    continue
                task_id, actions = queue.pop(0)
                env.reset(options={"task_id": task_id})
                running[i] = list(actions)
            *_, terminated, truncated, _ = env.step(running[i].pop(0))
            steps += 1
            if terminated or truncated:
                assert not running[i]
                running[i] = None
    return time.perf_counter() - t0, steps


def adapter_in_process(env_id: str, episodes: list) -> tuple[float, int]:
    """The server's own work without the transport: ``SealEnvironment`` reset and step, and the
    JSON of each observation as OpenEnv serializes it, in this process."""
    import json

    from openenv.core.env_server.serialization import serialize_observation

    from seal_envs.integrations.openenv import SealAction, SealEnvironment

    env, steps = SealEnvironment(env_id), 0
    t0 = time.perf_counter()
    for task_id, actions in episodes:
        json.dumps(serialize_observation(env.reset(task_id=task_id)))
        for action in actions:
            json.dumps(serialize_observation(env.step(SealAction(message=action))))
            steps += 1
    return time.perf_counter() - t0, steps


async def _session(url: str, share: list) -> int:
    from seal_envs.integrations.openenv import SealEnvClient

    steps = 0
    async with SealEnvClient(base_url=url) as client:
        for task_id, actions in share:
            await client.reset(task_id=task_id)
            for action in actions:
                result = await client.step(action)
                steps += 1
            assert result.done and result.reward == 1.0
    return steps


def over_loopback(url: str, episodes: list, sessions: int) -> tuple[float, int]:
    shares = [episodes[i::sessions] for i in range(sessions)]

    async def run() -> int:
        return sum(await asyncio.gather(*(_session(url, s) for s in shares if s)))

    t0 = time.perf_counter()
    steps = asyncio.run(run())
    return time.perf_counter() - t0, steps


def start_server(env_id: str, max_sessions: int) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "seal_cli", "serve", env_id, "--port", "0", "--max-sessions",
                             str(max_sessions), "--idle-timeout", "0"], stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    if not line.startswith("serving"):
        proc.kill()
        raise SystemExit(f"seal serve did not start: {line!r}")
    return proc, line.split(" on ")[1].split()[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="seal/ToolUse-v0", help="env id (default %(default)s)")
    p.add_argument("--episodes", type=int, default=96, help="oracle episodes per setting (default %(default)s)")
    p.add_argument("--sessions", type=int, nargs="+", default=[1, 8, 32], help="concurrent sessions (default 1 8 32)")
    p.add_argument("--repeat", type=int, default=2, help="runs per setting, the best kept (default %(default)s)")
    args = p.parse_args()

    episodes = oracle_episodes(args.env, args.episodes)
    proc, url = start_server(args.env, max(args.sessions))
    rows = []
    adapter = min((adapter_in_process(args.env, episodes) for _ in range(args.repeat)), key=lambda r: r[0])
    try:
        over_loopback(url, episodes[:2], 1)  # warm the server (first imports, caches)
        for n in args.sessions:
            local = min((in_process(args.env, episodes, n) for _ in range(args.repeat)), key=lambda r: r[0])
            remote = min((over_loopback(url, episodes, n) for _ in range(args.repeat)), key=lambda r: r[0])
            assert local[1] == remote[1]
            rows.append((n, local[1], local[1] / local[0], remote[1] / remote[0]))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)

    print(f"{os.cpu_count()} CPU cores, {platform.machine()}, Python {platform.python_version()}, {date.today()}; "
          f"{args.env}, {args.episodes} oracle episodes per setting, best of {args.repeat}\n")
    print("| concurrent sessions | steps | in-process steps/s | loopback steps/s | loopback / in-process |")
    print("|---|---|---|---|---|")
    for n, steps, local, remote in rows:
        print(f"| {n} | {steps} | {local:.0f} | {remote:.0f} | {remote / local:.2f} |")
    print(f"\nThe server's work without the transport (SealEnvironment reset + step + the JSON of each "
          f"observation, in-process, one session): {adapter[1] / adapter[0]:.0f} steps/s")


if __name__ == "__main__":
    main()
