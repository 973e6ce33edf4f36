"""Where issue 16's step targets stand: what a step costs without the copies ``info`` must hold.

    python benchmarks/bench_step_parts.py [--episodes 200] [--repeat 3]

Per native domain (bank, shop), the median ``env.step`` of oracle episodes as the env is, and
with ``info`` cut to the two fields the oracle reads and no copies of results (the env's
``_info`` and its result copy replaced in this process only: the library is not changed). That
is a floor for the step while every ``info`` owns a copy of the conversation and the tool list.
With ``bfcl-eval`` installed, also what the tool list costs an info that carries it (32 tools of
``multi_turn_base_0``: a fresh list of the shared read-only schemas), beside a deep copy of it
(``thaw``, what an info held before) and that entry's median step. Best of ``--repeat`` rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit


def median_step(domain: str, episodes: int, lean: bool) -> float:
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_envs import env as env_module
    from seal_envs.agents import OracleAgent

    env = gym.make("seal/ToolUse-v0", domains=(domain,)).unwrapped
    if lean:  # on this object only
        env._info = lambda label: {"step_label": {} if label is None else label.to_dict(), "user_turn": env.user_turn}
        saved, env_module.deep_copy = env_module.deep_copy, (lambda value: value)
    try:
        steps = []
        for seed in range(episodes):
            agent, done = OracleAgent(), False
            _, info = env.reset(seed=seed)
            while not done:
                action = agent.act(env, info)
                start = time.perf_counter()
                _, _, terminated, truncated, info = env.step(action)
                steps.append(time.perf_counter() - start)
                done = terminated or truncated
        return statistics.median(steps)
    finally:
        if lean:
            env_module.deep_copy = saved


def bfcl_tools_copy() -> tuple[int, float, float, float] | None:
    try:
        from seal_envs.bfcl import loader
        from seal_envs.bfcl.source import build_task
        from seal_envs.registration import make_bfcl_env
    except ImportError:
        return None
    entry = "multi_turn_base_0"
    env = make_bfcl_env(split="all").unwrapped
    task, truth = build_task(entry), loader.ground_truth(loader.category_of(entry))[entry]
    steps = []
    for _ in range(20):
        env.reset(options={"task": task})
        for turn in truth:
            for call in turn:
                start = time.perf_counter()
                env.step(call)
                steps.append(time.perf_counter() - start)
            env.step("Done.")
    from seal_envs.core.frozen import thaw

    listed = min(timeit.repeat(lambda: env._rendered().listed(), number=500, repeat=3)) / 500
    copy = min(timeit.repeat(lambda: thaw(env.tools), number=500, repeat=3)) / 500
    return len(env.tools), listed, copy, statistics.median(steps)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--episodes", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    print("| domain | median step (us) | with info cut to two fields, no result copies (us) | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for domain in ("bank", "shop"):
        full = min(median_step(domain, args.episodes, False) for _ in range(args.repeat))
        lean = min(median_step(domain, args.episodes, True) for _ in range(args.repeat))
        print(f"| {domain} | {1e6 * full:.0f} | {1e6 * lean:.0f} | {lean / full:.2f} |")
    bfcl = bfcl_tools_copy()
    if bfcl is not None:
        tools, listed, copy, step = bfcl
        print(f"\nBFCL multi_turn_base_0: its {tools} tools cost an info that carries them (reset, a changed list, the end) "
              f"{1e6 * listed:.1f} us (a deep copy: {1e6 * copy:.0f} us), beside a {1e6 * step:.0f} us median step")


if __name__ == "__main__":
    main(sys.argv[1:])
