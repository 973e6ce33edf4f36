"""Env throughput: task generation, reset and step latency per domain, memory per live episode.

    python benchmarks/bench_env.py [--episodes 200] [--concurrent 1000]

Prints a Markdown table (medians over oracle episodes) for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
import tracemalloc
from datetime import date

import gymnasium as gym

import seal_envs  # noqa: F401
from seal_envs.agents import OracleAgent
from seal_envs.domains import GENERATORS
from seal_envs.tasks import generate


def per_domain(domain: str, episodes: int) -> dict:
    env = gym.make("seal/ToolUse-v0", domains=(domain,)).unwrapped
    t0 = time.perf_counter()
    for seed in range(episodes):
        generate.__wrapped__(domain, 900_000 + seed, 1 + seed % 4, "train")
    gen_rate = episodes / (time.perf_counter() - t0)
    resets, steps = [], []
    for seed in range(episodes):
        agent = OracleAgent()
        t = time.perf_counter()
        _, info = env.reset(seed=seed)
        resets.append(time.perf_counter() - t)
        done = False
        while not done:
            action = agent.act(env, info)
            t = time.perf_counter()
            _, _, term, trunc, info = env.step(action)
            steps.append(time.perf_counter() - t)
            done = term or trunc
    return {"domain": domain, "gen": gen_rate, "reset_ms": 1e3 * statistics.median(resets),
            "step_ms": 1e3 * statistics.median(steps), "steps_s": len(steps) / sum(steps)}


def memory_per_episode(n: int) -> tuple[float, float]:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    envs = [gym.make("seal/ToolUse-v0").unwrapped for _ in range(n)]
    t = time.perf_counter()
    for i, env in enumerate(envs):
        env.reset(seed=i)
        env.step('<tool_call>{"name": "get_balance", "arguments": {"account_id": "ACC-1001"}}</tool_call>')
    elapsed = time.perf_counter() - t
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used / n / 1024, elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=200)
    ap.add_argument("--concurrent", type=int, default=1000)
    args = ap.parse_args()
    print(f"Machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"date {date.today()}\n")
    print("| domain | tasks generated/s | median reset (ms) | median step (ms) | steps/s |")
    print("|---|---|---|---|---|")
    for d in GENERATORS:
        r = per_domain(d, args.episodes)
        print(f"| {d} | {r['gen']:.0f} | {r['reset_ms']:.2f} | {r['step_ms']:.3f} | {r['steps_s']:.0f} |")
    kib, secs = memory_per_episode(args.concurrent)
    print(f"\n{args.concurrent} concurrent live episodes in one process: {kib:.0f} KiB each "
          f"(tracemalloc), reset + one step of all in {secs:.2f} s.")


if __name__ == "__main__":
    main()
