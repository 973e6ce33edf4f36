"""A sweep of `seal train` runs (recipe variants x seeds) behind its defaults: one table and one plot.

Every run is ``seal train`` itself (the shipped default agent, the bank env, greedy evaluation of
the same held-out test tasks before and after), with one variant's flags on top of the recipe:

    python -m benchmarks.sweep --variants recipe filter --seeds 0 1 2 --workers 2 --out runs/recipe
    python -m benchmarks.sweep --out runs/recipe --report-only     # table.md and recipe.png again

``--study`` is the efficacy study on this recipe (issue 13): the SEAL arms in ``STUDY`` x seeds
0-2, two at a time, paired against stock GRPO (about 1.5 hours on 2 cores); ``--quick`` is the
same pipeline at 2 updates, 20 evaluation tasks and one seed (a few minutes), to check that it
runs, not to measure:

    python -m benchmarks.sweep --study --out runs/arms
    python -m benchmarks.sweep --study --quick --out runs/arms-quick

Runs are resumable (a run folder with ``evaluation.json`` is done and skipped). Each run uses one
torch thread; ``--workers 2`` runs two at a time, each pinned to its own core when ``taskset``
exists. The table reports, per run, greedy success before and after, the change and its 2 SE
(two independent binomial SEs: conservative, the tasks are the same), the minutes of RL and the
sampled training success of the first and last steps.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from seal_envs.run_folder import EVALUATION_FILE, METRICS_FILE

#: Flags on top of ``seal train``'s defaults (seal_trl.training.train.RECIPE) of the day each round ran:
#: the defaults moved twice (16 updates and KL 0.04 after the second round; step weighting after
#: the efficacy arms), and docs/benchmarks.md states each round's. The arms spell their weighting.
VARIANTS: dict[str, list[str]] = {
    "recipe": [],
    "filter": ["--skip-uniform-tasks", "8", "--resample-uniform-groups", "2"],
    "filter_d2_4": ["--skip-uniform-tasks", "8", "--resample-uniform-groups", "2", "--difficulties", "2,3,4",
                    "--steps", "20"],
    "lr_1e-3": ["--lr", "1e-3"],
    "lr_2e-4": ["--lr", "2e-4"],
    "d2_4": ["--difficulties", "2,3,4"],
    "progress_reward": ["--reward-mode", "progress"],
    "temp_1.5": ["--temperature", "1.5"],
    "iters_2": ["--num-iterations", "2"],
    "group_16": ["--num-generations", "16", "--tasks-per-step", "4"],
    "beta_0.04": ["--beta", "0.04"],
    "loss_grpo": ["--loss-type", "grpo"],
    "seal": ["--weighting", "step", "--evolution"],
    # 2026-12-04, second round: fresh RL tasks (the default since; --rl-tasks) on difficulties 2-3, 40 updates
    "fresh_d2_3": ["--difficulties", "2,3", "--steps", "40"],
    "fresh_d2_3_beta": ["--difficulties", "2,3", "--steps", "40", "--beta", "0.04"],
    "fresh_d2_beta_60": ["--difficulties", "2", "--steps", "60", "--beta", "0.04"],
    "fresh_d2_3_beta_iters2": ["--difficulties", "2,3", "--steps", "40", "--beta", "0.04", "--num-iterations", "2"],
    "fresh_d2_3_blame": ["--difficulties", "2,3", "--steps", "40", "--weighting", "step", "--set", "tag_source=label",
                         "--set", 'tag_weights={"ok": 0.05}', "--set", "apply_to=negative", "--set", "min_scale=0.05",
                         "--set", "renormalize=true"],
    # third round: sub-goal reward to reach difficulty 4 (no sample ever passes it), and a slower step under KL
    "fresh_d2_4_progress_beta": ["--difficulties", "2,3,4", "--steps", "40", "--beta", "0.04", "--reward-mode", "progress"],
    "fresh_d2_3_beta_lr2e-4": ["--difficulties", "2,3", "--steps", "40", "--beta", "0.04", "--lr", "2e-4"],
    # fourth round: RL only on tasks that call the tool whose arguments the agent gets wrong (set_alert's
    # channel: 16 of the 22 failing difficulty 2-3 test tasks)
    "alert_40": ["--rl-tools", "set_alert", "--steps", "40"],
    "alert_40_nokl": ["--rl-tools", "set_alert", "--steps", "40", "--beta", "0"],
    # fifth round: the levers issue 13 lists that were not measured yet, one at a time on top of arm_grpo
    # (stock GRPO on today's recipe), so each pairs with arm_grpo's run of the same seed
    "lever_temp_0.7": ["--weighting", "none", "--temperature", "0.7"],
    "lever_temp_1.3": ["--weighting", "none", "--temperature", "1.3"],
    "lever_group_16": ["--weighting", "none", "--num-generations", "16", "--tasks-per-step", "4"],
    "lever_loss_grpo": ["--weighting", "none", "--loss-type", "grpo"],
    "lever_iters_2": ["--weighting", "none", "--num-iterations", "2"],
    "lever_cosine_1e-3": ["--weighting", "none", "--lr", "1e-3", "--set", "lr_scheduler_type=cosine",
                          "--set", "warmup_steps=2"],
    # the efficacy arms on the working recipe (issue 13 item 4): `seal train`'s defaults plus one SEAL part each
    "arm_grpo": ["--weighting", "none"],
    "arm_step": ["--weighting", "step"],
    "arm_apatch": ["--weighting", "trajectory"],
    "arm_evolution": ["--weighting", "none", "--evolution"],
    "arm_seal": ["--weighting", "step", "--evolution"],
    "arm_obslite": ["--weighting", "none", "--surface", "observation_lite"],
    # at the default thresholds (raise 0.3) no channel of this agent fires (worst scope 0.22): lower ones
    "arm_evolution_t15": ["--weighting", "none", "--evolution", "--set", "evolver_raise_threshold=0.15",
                          "--set", "evolver_fade_threshold=0.05"],
    "arm_seal_t15": ["--weighting", "step", "--evolution", "--set", "evolver_raise_threshold=0.15",
                     "--set", "evolver_fade_threshold=0.05"],
    # issue 31: outcome-reward RL at the cusp of a skill (a snapshot of the warm start's own schedule,
    # --model), on the difficulty whose sampled success is strictly between 0 and 1 there
    "cusp_d1": ["--weighting", "none", "--difficulties", "1", "--beta", "0", "--max-episode-steps", "6"],
    "cusp_d1_80": ["--weighting", "none", "--difficulties", "1", "--beta", "0", "--max-episode-steps", "6", "--steps", "80"],
    "cusp_d1_80_cosine": ["--weighting", "none", "--difficulties", "1", "--beta", "0", "--max-episode-steps", "6",
                          "--steps", "80", "--lr", "1e-3", "--set", "lr_scheduler_type=cosine", "--set", "warmup_steps=2"],
}

#: The efficacy study's arms: stock GRPO and one SEAL part each. The default-threshold evolution
#: arms are left out: at this agent's failure rates nothing evolves, so they repeat arm_grpo and
#: arm_step bit for bit (docs/benchmarks.md).
STUDY = ("arm_grpo", "arm_step", "arm_apatch", "arm_evolution_t15", "arm_seal_t15", "arm_obslite")
STUDY_SEEDS = (0, 1, 2)
QUICK = {"seeds": (0,), "steps": 2, "eval_tasks": 20}


def run_dir(out: Path, variant: str, seed: int) -> Path:
    return out / variant / f"seed{seed}"


def command(out: Path, variant: str, seed: int, steps: int | None, eval_tasks: int, core: int | None,
            flags: list[str] | None = None) -> list[str]:
    """The ``seal train`` command of one run: the variant's flags (``VARIANTS`` unless given), then
    ``--steps`` when set."""
    cmd = [sys.executable, "-m", "seal_cli", "train", "--out", str(run_dir(out, variant, seed)), "--overwrite",
           "--seed", str(seed), "--threads", "1", "--eval-tasks", str(eval_tasks),
           *(VARIANTS[variant] if flags is None else flags)]
    if steps is not None:
        cmd += ["--steps", str(steps)]
    if core is not None and shutil.which("taskset"):
        cmd = ["taskset", "-c", str(core), *cmd]
    return cmd


def launch_all(jobs: list[tuple[str, int]], out: Path, steps: int | None, eval_tasks: int, workers: int,
               variants: dict[str, list[str]] | None = None) -> None:
    """Run ``jobs`` (variant, seed), ``workers`` at a time; ``variants`` maps a name to its flags
    (default :data:`VARIANTS`)."""
    running: list[tuple[subprocess.Popen, int, str]] = []
    free = list(range(workers))
    queue = list(jobs)
    while queue or running:
        while queue and free:
            variant, seed = queue.pop(0)
            core = free.pop(0)
            folder = run_dir(out, variant, seed)
            folder.mkdir(parents=True, exist_ok=True)
            log = open(folder.parent / f"seed{seed}.log", "w")
            cmd = command(out, variant, seed, steps, eval_tasks, core if workers > 1 else None,
                          None if variants is None else variants[variant])
            print(f"{time.strftime('%H:%M:%S')} start {variant} seed {seed}: {' '.join(cmd)}", flush=True)
            running.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), core, f"{variant}/{seed}"))
        time.sleep(5)
        for job in list(running):
            proc, core, name = job
            if proc.poll() is not None:
                running.remove(job)
                free.append(core)
                print(f"{time.strftime('%H:%M:%S')} done {name}: exit {proc.returncode}", flush=True)


def load_runs(out: Path) -> list[dict]:
    rows = []
    for path in sorted(out.glob("*/seed*/evaluation.json")):
        ev = json.loads(path.read_text())
        metrics = [json.loads(line) for line in (path.parent / METRICS_FILE).read_text().splitlines() if line]
        rows.append({"variant": path.parent.parent.name, "seed": int(path.parent.name[4:]), "eval": ev,
                     "train_success": [m.get("success_rate", 0.0) for m in metrics],
                     "mixed": [1 - m.get("frac_reward_zero_std", 1.0) for m in metrics]})
    return rows


def _by_difficulty(ev: dict) -> str:
    """``d2 0.62 → 0.46`` per difficulty: where a change came from."""
    before, after = ev["before"].get("by_difficulty", {}), ev["after"].get("by_difficulty", {})
    return ", ".join(f"d{d} {before[d]:.2f} → {after.get(d, float('nan')):.2f}" for d in sorted(before))


def markdown(rows: list[dict]) -> str:
    lines = ["| variant | seed | test tasks | test before | test after | change (points) | 2 SE | RL steps | RL minutes | "
             "train success first 3 → last 3 steps | groups with a gradient | by difficulty before → after |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |"]
    by_variant: dict[str, list[dict]] = {}
    for r in rows:
        ev, ts = r["eval"], r["train_success"]
        first, last = (sum(ts[:3]) / max(len(ts[:3]), 1)), sum(ts[-3:]) / max(len(ts[-3:]), 1)
        star = " *" if ev["difference"] > ev["two_se"] else ""
        lines.append(f"| {r['variant']} | {r['seed']} | {ev['before'].get('tasks', '')} | {ev['before']['success']:.3f} | "
                     f"{ev['after']['success']:.3f} | {100 * ev['difference']:+.1f}{star} | {100 * ev['two_se']:.1f} | "
                     f"{len(ts)} | {ev.get('train_seconds', 0) / 60:.1f} | {first:.2f} → {last:.2f} | "
                     f"{sum(r['mixed']) / max(len(r['mixed']), 1):.2f} | {_by_difficulty(ev)} |")
        by_variant.setdefault(r["variant"], []).append(r)
    lines += ["", "| variant | seeds | mean change (points) | 2 SE of the mean | 2 SE, paired with before | mean RL minutes |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for variant, rs in by_variant.items():
        diffs = [r["eval"]["difference"] for r in rs]
        mean = sum(diffs) / len(diffs)
        se = (sum(r["eval"]["two_se"] ** 2 for r in rs) ** 0.5) / len(rs)
        task_diffs = [d for r in rs if "passed_task_ids" in r["eval"]["before"]
                      for d in task_differences(r["eval"]["after"], r["eval"]["before"])]
        paired_se = f"{200 * _standard_error(task_diffs):.1f}" if len(task_diffs) > 1 else "n/a"
        minutes = sum(r["eval"].get("train_seconds", 0) for r in rs) / 60 / len(rs)
        lines.append(f"| {variant} | {len(rs)} | {100 * mean:+.1f} | {100 * se:.1f} | {paired_se} | {minutes:.1f} |")
    return "\n".join(lines) + "\n"


def task_differences(mine: dict, theirs: dict) -> list[int]:
    """Per held-out task, 1 where only ``mine`` passed, -1 where only ``theirs`` did, else 0: two
    greedy evaluations of the same tasks, compared task by task."""
    passed, other = set(mine["passed_task_ids"]), set(theirs["passed_task_ids"])
    return [1] * len(passed - other) + [-1] * len(other - passed) + [0] * (mine["tasks"] - len(passed ^ other))


def _standard_error(values: list[int]) -> float:
    mean = sum(values) / len(values)
    return (sum((v - mean) ** 2 for v in values) / max(len(values) - 1, 1) / len(values)) ** 0.5


def paired(rows: list[dict], baseline: str) -> str:
    """Each variant against ``baseline`` on the same held-out tasks and seeds: the mean of the
    per-task differences in greedy success (1, 0 or -1 for each task of each shared seed) and two
    standard errors of that mean. Pairing removes the task-to-task spread two independent
    evaluations carry, so it resolves smaller differences. That SE treats tasks as independent,
    but the tasks of one seed share one training run; the change per seed is printed beside it,
    since seeds are the replicates (one bad run moves a whole seed)."""
    runs = {(r["variant"], r["seed"]): r["eval"]["after"] for r in rows}
    lines = [f"| variant | seeds | paired tasks | change vs {baseline} (points) | 2 SE (paired) | tasks won / lost "
             "| change per seed (points) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for variant in sorted({v for v, _ in runs} - {baseline}):
        diffs, won, lost, per_seed = [], 0, 0, []
        for (v, seed), after in sorted(runs.items()):
            base = runs.get((baseline, seed))
            if v != variant or base is None or base["tasks"] != after["tasks"]:
                continue
            seed_diffs = task_differences(after, base)
            won, lost = won + seed_diffs.count(1), lost + seed_diffs.count(-1)
            diffs += seed_diffs
            per_seed.append(100 * sum(seed_diffs) / after["tasks"])
        if not diffs:
            continue
        mean = sum(diffs) / len(diffs)
        se = _standard_error(diffs)
        seeds_text = ", ".join(f"{d:+.1f}" for d in per_seed)
        lines.append(f"| {variant} | {len(per_seed)} | {len(diffs)} | {100 * mean:+.1f} | {200 * se:.1f} | {won} / {lost} "
                     f"| {seeds_text} |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    try:
        from matplotlib import colormaps
        from matplotlib.figure import Figure
    except ImportError:
        return
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax, ax2 = fig.subplots(1, 2)
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    # Past ten variants (the matrix has 14), the default cycle repeats colours within one legend.
    palette = colormaps["tab10" if len(variants) <= 10 else "tab20"].colors
    for i, v in enumerate(variants):
        rs = [r for r in rows if r["variant"] == v]
        for r in rs:
            b, a = r["eval"]["before"]["success"], r["eval"]["after"]["success"]
            ax.plot([i - 0.15, i + 0.15], [b, a], color=palette[i % len(palette)], marker="o")
            ax2.plot(range(1, len(r["train_success"]) + 1), r["train_success"], color=palette[i % len(palette)], alpha=0.7,
                     label=v if r is rs[0] else None)
    ax.set_xticks(range(len(variants)), variants, rotation=30, ha="right")
    ax.set_ylabel("greedy success, held-out test (before → after)")
    ax.set_title("Held-out success before and after GRPO")
    ax.grid(alpha=0.3)
    ax2.set_xlabel("GRPO step")
    ax2.set_ylabel("sampled success of the step's episodes")
    ax2.set_title("Training curves")
    ax2.grid(alpha=0.3)
    ax2.legend(fontsize=7)
    fig.savefig(path, dpi=110)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="runs/recipe")
    p.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=["recipe"])
    p.add_argument("--model", default=None, help="start every run from this model (default: seal train's, the shipped agent)")
    p.add_argument("--seeds", nargs="+", type=int, default=[0])
    p.add_argument("--steps", type=int, default=None, help="GRPO steps (default: the recipe's)")
    p.add_argument("--eval-tasks", type=int, default=200, help="held-out test tasks, greedy (default 200)")
    p.add_argument("--workers", type=int, default=1, help="runs at a time, one core each")
    p.add_argument("--report-only", action="store_true")
    p.add_argument("--baseline", default=None, help="also compare every variant with this one, paired by task and seed")
    p.add_argument("--study", action="store_true",
                   help=f"the efficacy study: variants {', '.join(STUDY)}, seeds 0-2, 2 workers, baseline arm_grpo")
    p.add_argument("--quick", action="store_true", help="with --study: 2 updates, 20 evaluation tasks, seed 0")
    args = p.parse_args(argv)
    if args.quick and not args.study:
        p.error("--quick goes with --study")
    if args.study:
        args.variants, args.seeds, args.baseline = list(STUDY), list(STUDY_SEEDS), args.baseline or "arm_grpo"
        args.workers = max(args.workers, 2)
        if args.quick:
            args.seeds, args.steps, args.eval_tasks = list(QUICK["seeds"]), QUICK["steps"], QUICK["eval_tasks"]
    return args


def run_and_report(out: Path, variants: dict[str, list[str]], seeds: list[int], steps: int | None, eval_tasks: int,
                   workers: int, baseline: str | None, files: tuple[str, str], report_only: bool = False) -> str:
    """Run every (variant, seed) not done yet, then write the tables (paired against ``baseline``
    when given) and the plot into ``out`` under ``files`` (markdown, png); return the tables."""
    if not report_only:
        # seed by seed, so a run stopped part way leaves every cell with the same seeds
        todo = [(v, s) for s in seeds for v in variants if not (run_dir(out, v, s) / EVALUATION_FILE).exists()]
        launch_all(todo, out, steps, eval_tasks, max(1, workers), variants)
    rows = load_runs(out)
    table = markdown(rows) + ("\n" + paired(rows, baseline) if baseline else "")
    (out / files[0]).write_text(table)
    plot(rows, out / files[1])
    return table


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    model = ["--model", args.model] if args.model else []
    print(run_and_report(Path(args.out), {v: [*VARIANTS[v], *model] for v in args.variants}, args.seeds, args.steps,
                         args.eval_tasks, args.workers, args.baseline, ("table.md", "recipe.png"), args.report_only))


if __name__ == "__main__":
    main(sys.argv[1:])
