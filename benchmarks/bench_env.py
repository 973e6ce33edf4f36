"""Env throughput: task generation, resets and steps per second per domain, memory per live episode.

    python benchmarks/bench_env.py [--episodes 200] [--concurrent 1000]

Per domain, ``--episodes`` oracle episodes (seeds 0..N-1): tasks generated per second, median
reset and step latency, resets and steps per second (over the time spent inside ``reset`` and
``step``).

Memory per env object (``gym.make``) and per live episode (``reset`` + the oracle's first step),
with ``--concurrent`` envs alive at once in one process, is the growth of the resident set size
(``/proc/self/statm``; tracemalloc made this part minutes long), each measurement in a fresh child
process so that memory freed by one cannot be reused by the next. ``--probe`` envs are measured
first; when ``--concurrent`` would not fit in half of ``MemAvailable``, the total is projected from
them (the table says so).

Prints a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import os
import platform
import statistics
import time
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
            "resets_s": len(resets) / sum(resets), "step_ms": 1e3 * statistics.median(steps),
            "steps_s": len(steps) / sum(steps), "steps_per_ep": len(steps) / episodes}


# -- memory --------------------------------------------------------------------------------
def rss_kib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024


def mem_available_kib() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return float(line.split()[1])
    return float("inf")


def live_episodes(n: int) -> dict:
    """Child process: ``n`` envs alive at once, each reset and stepped once by the oracle."""
    warm = gym.make("seal/ToolUse-v0")  # imports, caches and the first task set outside the measure
    _, info = warm.reset(seed=0)
    warm.step(OracleAgent().act(warm, info))
    gc.collect()
    r0 = rss_kib()
    t = time.perf_counter()
    envs = [gym.make("seal/ToolUse-v0") for _ in range(n)]
    make_s = time.perf_counter() - t
    gc.collect()
    r1 = rss_kib()
    t = time.perf_counter()
    for i, env in enumerate(envs):
        _, info = env.reset(seed=i)
        env.step(OracleAgent().act(env, info))
    play_s = time.perf_counter() - t
    gc.collect()
    r2 = rss_kib()
    assert all(env.unwrapped.task is not None for env in envs)
    return {"n": n, "env_kib": (r1 - r0) / n, "episode_kib": (r2 - r1) / n, "make_s": make_s, "play_s": play_s,
            "total_mib": (r2 - r0) / 1024}


def in_child(n: int) -> dict:
    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(live_episodes, (n,))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=200, help="oracle episodes per domain")
    ap.add_argument("--concurrent", type=int, default=1000, help="live episodes in one process")
    ap.add_argument("--probe", type=int, default=50, help="envs measured when --concurrent would not fit")
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, {date.today().isoformat()}; {args.episodes} oracle episodes per domain\n",
          flush=True)
    rows = []
    for d in GENERATORS:
        r = per_domain(d, args.episodes)
        rows.append(r)
        print(f"  {d}: done ({r['steps_per_ep']:.1f} steps per episode)", flush=True)
    print("\n| domain | tasks generated/s | median reset (ms) | resets/s | median step (ms) | steps/s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['domain']} | {r['gen']:.0f} | {r['reset_ms']:.2f} | {r['resets_s']:.0f} | "
              f"{r['step_ms']:.3f} | {r['steps_s']:.0f} |")

    print(f"\nmemory: probing {args.probe} envs ...", flush=True)
    r = in_child(args.probe)
    need_kib = (r["env_kib"] + r["episode_kib"]) * args.concurrent
    if need_kib < 0.5 * mem_available_kib() and args.concurrent != args.probe:
        print(f"memory: {args.concurrent} envs ...", flush=True)
        r = in_child(args.concurrent)
    else:
        print(f"memory: {args.concurrent} envs would need {need_kib / 2**20:.1f} GiB "
              f"({mem_available_kib() / 2**20:.1f} GiB available): measured over {args.probe}, projected", flush=True)

    print(f"\nLive episodes in one process (RSS growth, /proc/self/statm; reset + the oracle's first step)\n")
    print("| live episodes | per env object (KiB) | per episode state (KiB) | total (MiB) "
          "| gym.make per env (ms) | reset + step per episode (ms) |")
    print("|---|---|---|---|---|---|")
    projected = r["n"] != args.concurrent
    total = (r["env_kib"] + r["episode_kib"]) * args.concurrent / 1024 if projected else r["total_mib"]
    count = f"{args.concurrent} (projected from {r['n']})" if projected else f"{r['n']}"
    print(f"| {count} | {r['env_kib']:.1f} | {r['episode_kib']:.1f} | {total:,.1f}{' (projected)' if projected else ''}"
          f" | {1e3 * r['make_s'] / r['n']:.3f} | {1e3 * r['play_s'] / r['n']:.2f} |")


if __name__ == "__main__":
    main()
