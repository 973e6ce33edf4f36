"""Where along a warm start's schedule a skill emerges: greedy and sampled success per snapshot.

    seal warmstart --init runs/ws-stage1 --out runs/ws --steps 1500 --save-every 50 --threads 1
    python -m benchmarks.cusp runs/ws/steps --tasks 60 --samples 4 --out runs/cusp

RL can only teach where sampled success on a task is strictly between 0 and 1 (a GRPO group
with mixed rewards), and it pays most where greedy success is still low: the cusp of a skill.
This plays the first ``--tasks`` held-out test tasks (difficulties cycle 1-4) with every
snapshot ``step-NNNNN`` of a ``seal warmstart --save-every`` run, once greedily and ``--samples``
times at temperature 1.0 (the evaluation budget of :mod:`seal_trl.agent.checkpoint`), and writes per
snapshot: greedy and sampled success by difficulty and the share of tasks whose samples disagree.
Results are kept per snapshot in ``--out/cusp.json`` (a rerun skips what is there); the table is
``cusp.md`` and the plot ``cusp.png``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks.group_signal import outcomes

ENV_ID = "seal/ToolUse-Bank-v0"


def summarize(per_task: dict[str, tuple[int, list[bool]]]) -> dict:
    """Mean success by difficulty and overall, and the share of tasks with mixed samples."""
    by: dict[int, list[float]] = {}
    mixed = 0
    for difficulty, passed in per_task.values():
        rate = sum(passed) / len(passed)
        by.setdefault(difficulty, []).append(rate)
        mixed += 0 < rate < 1
    rates = [r for rs in by.values() for r in rs]
    return {"success": sum(rates) / max(len(rates), 1), "mixed": mixed / max(len(per_task), 1),
            "by_difficulty": {str(d): sum(rs) / len(rs) for d, rs in sorted(by.items())}}


def measure(model: str, tasks: int, samples: int) -> dict:
    start = time.perf_counter()
    greedy = summarize(outcomes(model, "test", tasks, 1, 0.0, ENV_ID))
    sampled = summarize(outcomes(model, "test", tasks, samples, 1.0, ENV_ID))
    return {"greedy": greedy, "sampled": sampled, "seconds": round(time.perf_counter() - start, 1)}


def snapshots(folder: Path) -> list[tuple[int, Path]]:
    found = sorted((int(p.name.split("-")[1]), p) for p in folder.glob("step-*") if (p / "config.json").exists())
    if not found:
        raise SystemExit(f"{folder}: no step-NNNNN snapshots (seal warmstart --save-every N writes them)")
    return found


def markdown(results: dict[str, dict], tasks: int, samples: int) -> str:
    lines = [f"| step | greedy success | greedy by difficulty | sampled success ({samples} per task) | "
             "sampled by difficulty | tasks with mixed samples | seconds |",
             "| ---: | ---: | --- | ---: | --- | ---: | ---: |"]
    for step, r in sorted(results.items(), key=lambda kv: int(kv[0])):
        g, s = r["greedy"], r["sampled"]
        lines.append(f"| {step} | {g['success']:.2f} | "
                     + ", ".join(f"d{d} {v:.2f}" for d, v in g["by_difficulty"].items())
                     + f" | {s['success']:.2f} | " + ", ".join(f"d{d} {v:.2f}" for d, v in s["by_difficulty"].items())
                     + f" | {s['mixed']:.2f} | {r['seconds']:.0f} |")
    return f"First {tasks} bank test tasks, canonical surface, 12 actions of 64 tokens.\n\n" + "\n".join(lines) + "\n"


def plot(results: dict[str, dict], path: Path) -> None:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return
    steps = sorted(results, key=int)
    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, kind in zip(axes, ("greedy", "sampled")):
        for d in sorted({d for s in steps for d in results[s][kind]["by_difficulty"]}):
            ax.plot([int(s) for s in steps], [results[s][kind]["by_difficulty"].get(d, float("nan")) for s in steps],
                    marker="o", label=f"difficulty {d}")
        ax.plot([int(s) for s in steps], [results[s][kind]["success"] for s in steps], color="k", lw=2, label="all")
        ax.set_title(f"{kind} success on held-out test tasks")
        ax.set_xlabel("warm-start step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("success")
    axes[1].legend(fontsize=8)
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("snapshots", help="a folder of step-NNNNN snapshots (seal warmstart --save-every)")
    p.add_argument("--tasks", type=int, default=60, help="first N test tasks (default %(default)s)")
    p.add_argument("--samples", type=int, default=4, help="samples per task at temperature 1 (default %(default)s)")
    p.add_argument("--steps", type=int, nargs="*", default=None, help="only these snapshot steps (default: all)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default %(default)s)")
    p.add_argument("--out", default="runs/cusp")
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "cusp.json"
    results = json.loads(store.read_text()) if store.exists() else {}
    for step, folder in snapshots(Path(args.snapshots)):
        if (args.steps and step not in args.steps) or str(step) in results:
            continue
        results[str(step)] = measure(str(folder), args.tasks, args.samples)
        r = results[str(step)]
        print(f"{time.strftime('%H:%M:%S')} step {step}: greedy {r['greedy']['success']:.2f}, sampled "
              f"{r['sampled']['success']:.2f}, mixed {r['sampled']['mixed']:.2f} ({r['seconds']:.0f} s)", flush=True)
        store.write_text(json.dumps(results, indent=1))
    (out / "cusp.md").write_text(markdown(results, args.tasks, args.samples))
    plot(results, out / "cusp.png")
    print((out / "cusp.md").read_text())


if __name__ == "__main__":
    main(sys.argv[1:])
