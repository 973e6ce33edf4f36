"""The slowest steps the state bounds of issue 30 allow, against the step bound the tests hold.

    python benchmarks/bench_state_bounds.py [--steps 10]

- BFCL: after a tree of ``MAX_STATE_VALUES`` is reached by ``cp``/``mv`` doubling, steps of 64
  such calls, each walked to the bound and refused (the state put back): the worst step there is.
- Files domain: 60 steps appending near-maximal lines to one file, then steps of 64 copies of it
  until the disk (``MAX_DISK_CHARS``) is full, then the turn-closing step that verifies it all.

Prints one Markdown table: per kind of step, its median and slowest wall time.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time


def _timed(env, action) -> float:
    start = time.perf_counter()
    env.step(action)
    return time.perf_counter() - start


def bfcl_at_the_bound(steps: int) -> list[float]:
    from seal_envs.registration import make_bfcl_env

    env = make_bfcl_env(split="all", max_steps=steps + 20)
    env.reset(options={"task_id": "multi_turn_long_context_7"})
    env.step("[mkdir(dir_name='d')]")
    times = []
    for s in range(steps + 2):  # the first two steps reach the bound
        calls = [c for i in range(32) for c in (f"cp(source='d', destination='c{s}_{i}')",
                                                f"mv(source='c{s}_{i}', destination='d')")]
        times.append(_timed(env, "[" + ", ".join(calls) + "]"))
    return times[2:]


def files_at_the_disk_bound() -> tuple[list[float], list[float], float]:
    import gymnasium as gym

    import seal_envs  # noqa: F401

    env = gym.make("seal/ToolUse-Files-v0", max_steps=200).unwrapped
    env.reset(seed=0)
    path = next(iter(env.backend.state["files"]))
    folder = path.rsplit("/", 1)[0]
    appends = [_timed(env, {"name": "append_to_file", "arguments": {"path": path, "line": "x" * 7900}})
               for _ in range(60)]
    copies = [_timed(env, [{"name": "copy", "arguments": {"source": path, "destination": f"{folder}/c{s}_{i}.txt"}}
                           for i in range(64)]) for s in range(10)]
    return appends, copies, _timed(env, "Done.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="BFCL steps at the bound (default 10)")
    args = parser.parse_args()
    rows = []
    from seal_envs.bfcl.loader import available

    if available():
        t = bfcl_at_the_bound(args.steps)
        rows.append(("BFCL: 64 cp/mv calls, each refused at the state bound", t))
    appends, copies, close = files_at_the_disk_bound()
    rows += [("files: one append of 7,900 characters to a file of up to 0.5 MB", appends),
             ("files: 64 copies of that file, until the disk is full", copies),
             ("files: the turn-closing step (verify and diagnose)", [close])]
    print(f"{time.strftime('%Y-%m-%d')}; Python {platform.python_version()}\n")
    print("| step | n | median | slowest |\n|---|---|---|---|")
    for name, times in rows:
        print(f"| {name} | {len(times)} | {statistics.median(times) * 1e3:.0f} ms | {max(times) * 1e3:.0f} ms |")


if __name__ == "__main__":
    main()
