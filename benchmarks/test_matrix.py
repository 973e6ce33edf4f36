"""The algorithm matrix: its cells, its quick mode, and a user's own algorithm as a trainer config."""

from pathlib import Path

import pytest

from benchmarks import matrix, sweep
from seal_trl.training.algorithms import ALGORITHMS


def test_every_algorithm_on_both_environments_paired_against_static_grpo():
    args = matrix.parse_args(["--out", "runs/x"])
    assert len(args.cells) == 2 * len(ALGORITHMS) and matrix.BASELINE in args.cells
    assert args.seeds == [0, 1, 2] and args.workers == 2
    static, evolving = args.cells["dr_grpo.static"], args.cells["dr_grpo.evolving"]
    assert static == ["--algorithm", "dr_grpo"] and evolving[:3] == ["--algorithm", "dr_grpo", "--evolution"]
    quick = matrix.parse_args(["--quick", "--model", "runs/ws/steps/step-00400"])
    assert quick.seeds == [0] and (quick.steps, quick.eval_tasks) == (2, 20)
    cmd = sweep.command(Path("runs/q"), "rloo.evolving", 0, quick.steps, quick.eval_tasks, None, quick.cells["rloo.evolving"])
    assert cmd[cmd.index("--model") + 1] == "runs/ws/steps/step-00400" and cmd[cmd.index("--steps") + 1] == "2"
    assert cmd[cmd.index("--algorithm") + 1] == "rloo" and "evolver_raise_threshold=0.15" in cmd


def test_sampling_cells_play_the_same_tasks_and_pair_against_uniform():
    from seal_cli.main import _parse, build_parser
    from seal_trl.training.train import seal_config

    args = matrix.parse_args(["--algorithms", "grpo", "--environments", "evolving_uniform", "evolving_learnability",
                              "--baseline", "grpo.evolving_uniform"])
    uniform, learn = (seal_config(_parse(build_parser(), ["train", *args.cells[c]])[0])
                      for c in ("grpo.evolving_uniform", "grpo.evolving_learnability"))
    assert (uniform.curriculum, learn.curriculum, learn.curriculum_mode) == (False, True, "learnability")
    assert uniform.evolution and learn.evolution and uniform.evolver_raise_threshold == learn.evolver_raise_threshold
    assert args.cells["grpo.evolving_learnability"][:-2] == args.cells["grpo.evolving_uniform"]
    with pytest.raises(SystemExit):
        matrix.parse_args(["--algorithms", "grpo", "--environments", "static", "--baseline", "grpo.evolving"])


def test_a_users_algorithm_is_a_yaml_trainer_config(tmp_path):
    from seal_cli.main import _parse, build_parser
    from seal_trl.training.train import seal_config

    mine = tmp_path / "mean_baseline_dapo.yaml"
    mine.write_text("loss_type: dapo\nadvantage_fn: seal_trl.training.algorithms:mean_baseline\nweighting: none\n")
    args = matrix.parse_args(["--algorithms", "grpo", str(mine), "--environments", "static"])
    assert set(args.cells) == {"grpo.static", "mean_baseline_dapo.static"}
    flags = args.cells["mean_baseline_dapo.static"]
    config = seal_config(_parse(build_parser(), ["train", *flags])[0])
    assert (config.advantage_fn, config.loss_type, config.weighting) == ("seal_trl.training.algorithms:mean_baseline", "dapo", "none")
    with pytest.raises(SystemExit):
        matrix.parse_args(["--algorithms", "ppo"])
