"""Env throughput: task generation, resets and steps per second per domain, memory per live episode.

    python benchmarks/bench_env.py [--episodes 200] [--concurrent 1000] [--baseline REV] [--repeat 3]

With ``--baseline REV`` the same measurements run on ``seal_envs`` as of git revision ``REV``
(extracted with ``git archive`` into a temporary folder) and on the working tree, side by side in
one run: every measurement is a fresh child process that imports one of the two, the two
alternate domain by domain and round by round (``--repeat`` rounds, the best of them kept), so
both see the same machine load. The table then shows before, after and the speed-up.

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
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOMAINS = ("bank", "shop", "files", "travel", "calendar", "smarthome")


def per_domain(domain: str, episodes: int) -> dict:
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_envs.agents import OracleAgent
    from seal_envs.tasks import generate

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
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_envs.agents import OracleAgent

    warm = gym.make("seal/ToolUse-v0")  # imports, caches and the first task set outside the measure
    _, info = warm.reset(seed=0)
    warm.step(OracleAgent().act(warm, info))
    from seal_envs.spaces import sanitize

    sanitize("\u00e9\n", 8)  # the once-per-process pattern for non-ASCII text (hundreds of KiB)
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


def in_child(root: Path, job: str, *args) -> dict:
    """Run ``job`` in a fresh Python that imports ``seal_envs`` from ``root``; its result as a dict.
    A fresh process per measurement: memory freed by one cannot be reused by the next, and the
    code under test is exactly the one in ``root``."""
    out = subprocess.run([sys.executable, __file__, "--child", str(root), job, *map(str, args)],
                         capture_output=True, text=True, cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(f"child {job} {args} on {root} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def child_main(root: str, job: str, *args: str) -> None:
    sys.path.insert(0, root)
    import seal_envs

    assert Path(seal_envs.__file__).resolve().is_relative_to(Path(root).resolve()), seal_envs.__file__
    result = per_domain(args[0], int(args[1])) if job == "domain" else live_episodes(int(args[0]))
    print(json.dumps(result))


def extract(rev: str, into: Path) -> str:
    """``seal_envs`` as of ``rev``, under ``into``; returns the revision's short hash."""
    short = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", rev, "seal_envs"], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return short


def best(runs: list[dict]) -> dict:
    """The fastest of the rounds, measure by measure."""
    out = dict(runs[0])
    for key in ("reset_ms", "step_ms"):
        out[key] = min(r[key] for r in runs)
    for key in ("gen", "resets_s", "steps_s"):
        out[key] = max(r[key] for r in runs)
    return out


def memory(root: Path, args) -> dict:
    print(f"memory ({root}): probing {args.probe} envs ...", flush=True)
    r = in_child(root, "memory", args.probe)
    need_kib = (r["env_kib"] + r["episode_kib"]) * args.concurrent
    if need_kib < 0.5 * mem_available_kib() and args.concurrent != args.probe:
        print(f"memory: {args.concurrent} envs ...", flush=True)
        r = in_child(root, "memory", args.concurrent)
    else:
        print(f"memory: {args.concurrent} envs would need {need_kib / 2**20:.1f} GiB "
              f"({mem_available_kib() / 2**20:.1f} GiB available): measured over {args.probe}, projected", flush=True)
    return r


def memory_row(label: str, r: dict, concurrent: int) -> str:
    projected = r["n"] != concurrent
    total = (r["env_kib"] + r["episode_kib"]) * concurrent / 1024 if projected else r["total_mib"]
    count = f"{concurrent} (projected from {r['n']})" if projected else f"{r['n']}"
    return (f"| {label}{count} | {r['env_kib']:.1f} | {r['episode_kib']:.1f} | {total:,.1f}"
            f"{' (projected)' if projected else ''} | {1e3 * r['make_s'] / r['n']:.3f} | {1e3 * r['play_s'] / r['n']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=200, help="oracle episodes per domain")
    ap.add_argument("--concurrent", type=int, default=1000, help="live episodes in one process")
    ap.add_argument("--probe", type=int, default=50, help="envs measured when --concurrent would not fit")
    ap.add_argument("--baseline", help="a git revision: measure its seal_envs beside the working tree's")
    ap.add_argument("--repeat", type=int, default=1, help="rounds per domain and version; the best is kept")
    args = ap.parse_args()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    print(f"{os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}, {date.today().isoformat()}; {args.episodes} oracle episodes per domain, "
          f"best of {args.repeat}; working tree at {head}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        versions = {"now": REPO}
        if args.baseline:
            versions = {"before": Path(tmp), "after": REPO}
            print(f"before: seal_envs at {extract(args.baseline, Path(tmp))} ({args.baseline}); after: the working tree",
                  flush=True)
        print()
        runs: dict[tuple[str, str], list[dict]] = {}
        for d in DOMAINS:
            for k in range(args.repeat):
                order = list(versions) if k % 2 == 0 else list(reversed(versions))
                for v in order:
                    runs.setdefault((d, v), []).append(in_child(versions[v], "domain", d, args.episodes))
            r = runs[(d, list(versions)[-1])][0]
            print(f"  {d}: done ({r['steps_per_ep']:.1f} steps per episode)", flush=True)
        rows = {key: best(value) for key, value in runs.items()}
        mem = {v: memory(root, args) for v, root in versions.items()}

    if not args.baseline:
        print("\n| domain | tasks generated/s | median reset (ms) | resets/s | median step (ms) | steps/s |")
        print("|---|---|---|---|---|---|")
        for d in DOMAINS:
            r = rows[(d, "now")]
            print(f"| {d} | {r['gen']:.0f} | {r['reset_ms']:.2f} | {r['resets_s']:.0f} | "
                  f"{r['step_ms']:.3f} | {r['steps_s']:.0f} |")
    else:
        print("\n| domain | tasks generated/s: before / after (x) | median reset (ms): before / after (x) "
              "| median step (us): before / after (x) | steps/s: before / after |")
        print("|---|---|---|---|---|")
        for d in DOMAINS:
            b, a = rows[(d, "before")], rows[(d, "after")]
            print(f"| {d} | {b['gen']:.0f} / {a['gen']:.0f} ({a['gen'] / b['gen']:.2f}x) "
                  f"| {b['reset_ms']:.2f} / {a['reset_ms']:.2f} ({b['reset_ms'] / a['reset_ms']:.2f}x) "
                  f"| {1e3 * b['step_ms']:.0f} / {1e3 * a['step_ms']:.0f} ({b['step_ms'] / a['step_ms']:.2f}x) "
                  f"| {b['steps_s']:.0f} / {a['steps_s']:.0f} |")

    print("\nLive episodes in one process (RSS growth, /proc/self/statm; reset + the oracle's first step)\n")
    print("| live episodes | per env object (KiB) | per episode state (KiB) | total (MiB) "
          "| gym.make per env (ms) | reset + step per episode (ms) |")
    print("|---|---|---|---|---|---|")
    for v, r in mem.items():
        print(memory_row("" if v == "now" else f"{v}: ", r, args.concurrent))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child_main(*sys.argv[2:])
    else:
        main()
