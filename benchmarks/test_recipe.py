"""The recipe search's paired comparison: per-task differences on shared tasks and seeds."""

from benchmarks.recipe import paired


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
    assert float(cells[4]) > 0 and "| base |" not in table
