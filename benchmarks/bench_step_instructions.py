"""Instructions per env step, counted by valgrind: a step cost that machine noise cannot move.

    python benchmarks/bench_step_instructions.py [--domains bank shop] [--episodes 30] [--baseline REV]

Why: on a shared 2-core machine the same step's median wall time moves by 10-30% from one run to
the next, more than most single changes save. Callgrind counts the instructions the CPU runs,
which repeat to within about 0.5% whatever else runs on the machine, so two trees compare by a
ratio measured in one sitting. Wall time still decides (``bench_env.py``); this says which way a
change goes and by how much, while the matrix or CI keeps the cores busy.

Per domain: the oracle's actions for seeds 0..N-1 are recorded first (outside the count), then
replayed in a fresh Python under ``valgrind --tool=callgrind``, twice: resets and every step but
each episode's last (the final step verifies and diagnoses: a different cost), and resets only.
Collection is switched on only inside ``itertools.starmap`` (``--toggle-collect=starmap_next``),
which runs the measured episodes after a warm-up of three, so imports and first-use caches are not
counted. Instructions per step = (first count - second count) / steps. With ``--baseline REV``
the same runs count ``seal_envs`` as of ``REV`` (``git archive``) beside the working tree.
Needs ``valgrind`` (Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# the benchmarks folder, not the repository root: the replayed process must import seal_envs from
# its PYTHONPATH (the tree under test), which the root, put first, would shadow
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_env import REPO, extract  # noqa: E402


def record(domain: str, episodes: int, path: Path) -> None:
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_envs.agents import OracleAgent

    env = gym.make("seal/ToolUse-v0", domains=(domain,)).unwrapped
    actions = []
    for seed in range(episodes):
        agent, done, taken = OracleAgent(), False, []
        _, info = env.reset(seed=seed)
        while not done:
            taken.append(agent.act(env, info))
            *_, terminated, truncated, info = env.step(taken[-1])
            done = terminated or truncated
        actions.append(taken)
    path.write_text(json.dumps(actions))


def replay(domain: str, path: str, mode: str) -> None:
    """The process callgrind counts: warm up, then the measured episodes under starmap."""
    import gymnasium as gym

    import seal_envs  # noqa: F401

    actions = json.loads(Path(path).read_text())
    env = gym.make("seal/ToolUse-v0", domains=(domain,)).unwrapped
    for seed, taken in enumerate(actions[:3]):  # lazy imports, compiled patterns, caches
        env.reset(seed=seed)
        for action in taken:
            env.step(action)

    def episode(seed: int, taken: list) -> int:
        env.reset(seed=seed)
        steps = taken[:-1] if mode == "steps" else []
        for action in steps:
            env.step(action)
        return len(steps)

    print(sum(itertools.starmap(episode, enumerate(actions))))


def count(root: Path, domain: str, path: Path, mode: str) -> tuple[int, int]:
    """(instructions, steps) of one replay of ``seal_envs`` under ``root``."""
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONHASHSEED="0")
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--collect-atstart=no",
                          "--toggle-collect=starmap_next", sys.executable, __file__, "--replay", domain, str(path), mode],
                         capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    found = re.search(r"Collected : (\d+)", out.stderr)
    if out.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind on {root} failed:\n{out.stderr[-2000:]}")
    return int(found.group(1)), int(out.stdout.strip().splitlines()[-1])


def per_step(root: Path, domain: str, path: Path) -> float:
    stepped, steps = count(root, domain, path, "steps")
    resets, _ = count(root, domain, path, "resets")
    return (stepped - resets) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domains", nargs="+", default=["bank"])
    ap.add_argument("--episodes", type=int, default=30)
    ap.add_argument("--baseline", help="a git revision: count its seal_envs beside the working tree's")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"working tree": REPO}
        if args.baseline:
            before = Path(tmp) / "before"
            before.mkdir()
            trees = {extract(args.baseline, before): before, **trees}
        print("| domain | " + " | ".join(f"instructions per step: {name}" for name in trees)
              + (" | after / before |" if args.baseline else " |"))
        print("|---" * (len(trees) + 1 + bool(args.baseline)) + "|")
        for domain in args.domains:
            path = Path(tmp) / f"{domain}.json"
            record(domain, args.episodes, path)
            counts = [per_step(root, domain, path) for root in trees.values()]
            ratio = f" | {counts[1] / counts[0]:.3f} |" if args.baseline else " |"
            print(f"| {domain} | " + " | ".join(f"{c / 1000:.1f}k" for c in counts) + ratio, flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--replay"]:
        replay(*sys.argv[2:5])
    else:
        main()
