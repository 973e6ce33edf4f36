"""The sweep's paired comparison: per-task differences on shared tasks and seeds."""

from pathlib import Path

from benchmarks.sweep import markdown, paired


def _row(variant, seed, passed, tasks=4):
    return {"variant": variant, "seed": seed, "eval": {"after": {"tasks": tasks, "passed_task_ids": passed}}}


def test_paired_counts_wins_and_losses_per_task_and_seed():
    rows = [_row("base", 0, ["a", "b"]), _row("arm", 0, ["a", "c", "d"]),
            _row("base", 1, ["a"]), _row("arm", 1, ["a"]), _row("arm", 2, ["a", "b", "c", "d"])]  # seed 2: no baseline
    table = paired(rows, "base")
    line = next(l for l in table.splitlines() if l.startswith("| arm |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # seed 0: won c and d, lost b -> +1 +1 -1 0; seed 1: 0 0 0 0 -> mean 1/8
    assert cells[:4] == ["arm", "2", "8", "+12.5"] and cells[5] == "2 / 1"
    assert cells[6] == "+25.0, +0.0"  # seed 0: 3 passed against 2 of 4 tasks; seed 1: equal
    assert float(cells[4]) > 0 and "| base |" not in table


def test_summary_pairs_each_variant_with_its_own_before_task_by_task():
    def run(seed, before, after):
        side = lambda passed: {"tasks": 4, "success": len(passed) / 4, "passed_task_ids": passed}
        return {"variant": "arm", "seed": seed, "train_success": [0.5], "mixed": [1.0],
                "eval": {"before": side(before), "after": side(after), "difference": (len(after) - len(before)) / 4,
                         "two_se": 0.7}}
    # seed 0 wins c, loses b; seed 1 wins d: differences +1 -1 0 0 and 0 0 0 +1 -> mean 1/8
    table = markdown([run(0, ["a", "b"], ["a", "c"]), run(1, ["a"], ["a", "d"])])
    line = table.splitlines()[-1]
    cells = [c.strip() for c in line.strip("|").split("|")]
    mean, var = 1 / 8, (2 * (7 / 8) ** 2 + (9 / 8) ** 2 + 5 * (1 / 8) ** 2) / 7
    assert cells[:3] == ["arm", "2", "+12.5"] and cells[4] == f"{200 * (var / 8) ** 0.5:.1f}"
    assert cells[3] == f"{100 * (2 * 0.7 ** 2) ** 0.5 / 2:.1f}"  # unpaired: each run's own 2 SE, combined


def test_study_runs_every_arm_over_three_seeds_paired_against_stock_grpo():
    from benchmarks.sweep import STUDY, VARIANTS, command, parse_args

    args = parse_args(["--study", "--out", "runs/x"])
    assert args.variants == list(STUDY) and args.seeds == [0, 1, 2] and args.baseline == "arm_grpo"
    assert args.workers == 2 and args.steps is None and args.eval_tasks == 200 and "arm_grpo" in STUDY
    assert set(STUDY) <= set(VARIANTS)
    quick = parse_args(["--study", "--quick"])
    assert quick.variants == list(STUDY) and quick.seeds == [0] and (quick.steps, quick.eval_tasks) == (2, 20)
    cmd = command(Path("runs/q"), "arm_step", 0, quick.steps, quick.eval_tasks, None)
    assert cmd[cmd.index("--steps") + 1] == "2" and cmd[cmd.index("--eval-tasks") + 1] == "20"
    assert cmd[cmd.index("--weighting") + 1] == "step"


def test_quick_needs_study():
    import pytest

    from benchmarks.sweep import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--quick"])
