"""Our verdict against bfcl-eval's multi_turn_checker on perturbed ground truths."""

import pytest

pytest.importorskip("bfcl_eval")

from seal_envs.bfcl.compare import agreement, sample_ids


@pytest.mark.slow
@pytest.mark.parametrize("irrelevance", [("miss_func",), ()], ids=["default", "checker-only"])
def test_agreement_on_300_perturbed_trajectories(irrelevance):
    report = agreement(sample_ids(25, seed=0), seed=0, irrelevance=irrelevance)
    assert report.total == 300
    assert 0.2 < report.bfcl_pass / report.total < 0.8  # the perturbations break some, not all
    assert report.rate >= 0.99, report.disagreements
    unexplained = [d for d in report.disagreements if d["reason"] is None]
    assert not unexplained, unexplained
