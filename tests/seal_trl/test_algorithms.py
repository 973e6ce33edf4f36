"""The algorithms of the matrix: advantage functions by value, names resolved or refused early."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from seal_trl.training.algorithms import ALGORITHMS, leave_one_out, mean_baseline, resolve_advantage_fn  # noqa: E402


def test_leave_one_out_subtracts_the_mean_of_the_others():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    got = leave_one_out(rewards)
    want = torch.tensor([[1 - 1 / 3, -2 / 3, -2 / 3, 1 - 1 / 3], [-1 / 3, -1 / 3, -1 / 3, 1.0]])
    torch.testing.assert_close(got, want)
    # the leave-one-out baseline is the mean baseline scaled by G / (G - 1)
    torch.testing.assert_close(got, mean_baseline(rewards) * 4 / 3)
    with pytest.raises(ValueError, match="at least 2"):
        leave_one_out(torch.tensor([[1.0]]))


def test_a_uniform_group_has_no_advantage():
    rewards = torch.tensor([[0.5, 0.5, 0.5]])
    assert float(leave_one_out(rewards).abs().sum()) == 0.0 == float(mean_baseline(rewards).abs().sum())


def test_resolve_names_import_paths_and_refusals():
    assert resolve_advantage_fn("rloo") is leave_one_out
    assert resolve_advantage_fn("seal_trl.training.algorithms:mean_baseline") is mean_baseline
    for bad, match in (("nope", "must be one of"), ("seal_trl.training.algorithms:", "must be one of"),
                       ("seal_trl.nothing_here:f", "No module named"), ("seal_trl.training.algorithms:missing", "missing"),
                       ("seal_trl.training.algorithms:ALGORITHMS", "not callable")):
        with pytest.raises(ValueError, match=match):
            resolve_advantage_fn(bad)


def test_every_algorithm_is_a_valid_config(tmp_path):
    pytest.importorskip("trl")
    from seal_trl.training.config import SEALConfig

    for name, fields in ALGORITHMS.items():
        cfg = SEALConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, **fields)
        assert all(getattr(cfg, k) == v for k, v in fields.items()), name
    with pytest.raises(ValueError, match="advantage_fn"):
        SEALConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, advantage_fn="rlooo")
