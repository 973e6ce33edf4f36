"""The algorithm matrix (issue 31): every RL algorithm on the static and on the evolving environment.

    python -m benchmarks.matrix --quick --out runs/matrix-quick           # about 10 min on 2 cores
    python -m benchmarks.matrix --out runs/matrix                         # 7 x 2 x 3 runs, about 6.3 h on 2 cores (96-140 min a seed)
    python -m benchmarks.matrix --out runs/matrix --report-only           # matrix.md and matrix.png again
    python -m benchmarks.matrix --algorithms grpo --environments evolving_uniform evolving_learnability \
        --baseline grpo.evolving_uniform --out runs/sampling                   # the learnability curriculum

Each cell is ``seal train`` with one algorithm of :data:`seal_trl.training.algorithms.ALGORITHMS` (or a
trainer config of your own: a YAML file of ``seal train`` flags and SEALConfig fields, such as
``advantage_fn: mypackage.advantages:my_fn``) on top of the recipe, on the ``static`` canonical
surface or the ``evolving`` one (CoEvolution at thresholds that fire for the shipped agent: raise
0.15, fade 0.05). Every cell has the same sample budget (the recipe's updates x tasks x samples),
evaluates the same held-out test tasks greedily on the canonical surface, and is paired by seed
and task against stock GRPO on the static environment. Runs are resumable, one torch thread each,
two at a time (:mod:`benchmarks.sweep` launches them and writes the tables).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks import sweep
from seal_trl.training.algorithms import ALGORITHMS

EVOLVING = ["--evolution", "--set", "evolver_raise_threshold=0.15", "--set", "evolver_fade_threshold=0.05"]
#: The curriculum samples the env's own train split, so both sampling cells play that pool.
TRAIN_SPLIT = ["--rl-tasks", "train", "--difficulties", "1,2,3,4"]
ENVIRONMENTS: dict[str, list[str]] = {
    "static": [],
    "evolving": EVOLVING,
    # sampling on the evolving environment (issue 31 item 4): uniform rows against the learnability
    # curriculum, on the same tasks; pair them with --baseline ALGORITHM.evolving_uniform
    "evolving_uniform": [*EVOLVING, *TRAIN_SPLIT],
    "evolving_learnability": [*EVOLVING, *TRAIN_SPLIT, "--curriculum", "learnability"],
}
DEFAULT_ENVIRONMENTS = ("static", "evolving")
BASELINE = "grpo.static"
SEEDS = (0, 1, 2)
QUICK = {"seeds": (0,), "steps": 2, "eval_tasks": 20}


def algorithm_flags(algorithm: str) -> list[str]:
    """A built-in algorithm by name, or a trainer config file of the user's."""
    if algorithm in ALGORITHMS:
        return ["--algorithm", algorithm]
    path = Path(algorithm)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return ["--config", str(path)]
    raise ValueError(f"{algorithm!r} is neither an algorithm ({', '.join(ALGORITHMS)}) nor a YAML trainer config file")


def algorithm_name(algorithm: str) -> str:
    return algorithm if algorithm in ALGORITHMS else Path(algorithm).stem


def cells(algorithms: list[str], environments: list[str], model: str | None) -> dict[str, list[str]]:
    """``{"algorithm.environment": seal train flags}``: one variant of the sweep per cell."""
    extra = ["--model", model] if model else []
    return {f"{algorithm_name(a)}.{e}": [*algorithm_flags(a), *ENVIRONMENTS[e], *extra]
            for a in algorithms for e in environments}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="runs/matrix")
    p.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS),
                   help="built-in names or YAML trainer configs (default: all built-in)")
    p.add_argument("--environments", nargs="+", choices=list(ENVIRONMENTS), default=list(DEFAULT_ENVIRONMENTS),
                   help="default: static evolving; evolving_uniform and evolving_learnability compare sampling "
                        "modes on the train split")
    p.add_argument("--baseline", default=BASELINE, help="the cell every other is paired against (default %(default)s)")
    p.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    p.add_argument("--model", default=None, help="start every run from this model (default: the shipped agent)")
    p.add_argument("--steps", type=int, default=None, help="GRPO updates (default: the recipe's)")
    p.add_argument("--eval-tasks", type=int, default=200, help="held-out test tasks, greedy (default 200)")
    p.add_argument("--workers", type=int, default=2, help="runs at a time, one core each (default 2)")
    p.add_argument("--quick", action="store_true", help="2 updates, 20 evaluation tasks, seed 0: checks the "
                   "pipeline, measures nothing")
    p.add_argument("--report-only", action="store_true")
    args = p.parse_args(argv)
    if args.quick:
        args.seeds, args.steps, args.eval_tasks = list(QUICK["seeds"]), QUICK["steps"], QUICK["eval_tasks"]
    try:
        args.cells = cells(args.algorithms, args.environments, args.model)
    except ValueError as e:
        p.error(str(e))
    if args.baseline not in args.cells:
        p.error(f"--baseline {args.baseline} is not one of the cells: {', '.join(args.cells)}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    print(sweep.run_and_report(Path(args.out), args.cells, args.seeds, args.steps, args.eval_tasks, args.workers,
                               args.baseline, ("matrix.md", "matrix.png"), args.report_only))


if __name__ == "__main__":
    main(sys.argv[1:])
