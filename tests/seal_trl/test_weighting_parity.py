"""The trainer's weigher and the framework-neutral function are one implementation: the torch
helpers (expansion, per-sequence renormalisation) give what seal_envs.core.weighting gives."""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from seal_envs.core.weighting import WeightingConfig, token_advantage_weights  # noqa: E402
from seal_trl.weighting.advantage_weights import renormalize_mean_one, token_weights  # noqa: E402
from seal_trl.weighting.token_weigher import TokenWeigher  # noqa: E402

NAMES = ["ok", "format_error", "unknown_tool", "schema_violation", "missing_call", "response_mismatch", "env_error"]


def batch(seed: int):
    rng = random.Random(seed)
    labels, rows = [], []
    for _ in range(6):
        turns = rng.randint(1, 4)
        labels.append([{"label": rng.choice(NAMES), "turn": 0} for _ in range(turns)])
        row = []
        for k in range(turns):
            row += [k] * rng.randint(1, 5) + [-1] * rng.randint(0, 3)
        rows.append(row)
    width = max(map(len, rows))
    index = torch.tensor([r + [-1] * (width - len(r)) for r in rows])
    return index, labels, torch.tensor([rng.uniform(-1, 1) for _ in rows])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("mode, apply_to, renormalize", [
    ("step", "all", True), ("step", "negative", False), ("trajectory", "positive", False), ("none", "all", False)])
def test_trainer_weights_equal_the_neutral_function(seed, mode, apply_to, renormalize):
    index, labels, adv = batch(seed)
    weigher = TokenWeigher(mode, apply_to=apply_to, renormalize=renormalize)
    got = weigher.weights(index, labels, adv)
    cfg = WeightingConfig(mode=mode, apply_to=apply_to, renormalize=renormalize)
    want = torch.stack([torch.from_numpy(token_advantage_weights(index[b].numpy(), labels[b], cfg,
                                                                 advantage=float(adv[b]))) for b in range(len(labels))])
    assert torch.equal(got, want)
    # and the torch helpers spell the same arithmetic: expand per-turn weights, renormalise per sequence
    per_turn = [weigher.step_weights(lb + [None] * (int(index[b].max()) + 1 - len(lb)), float(adv[b]))
                for b, lb in enumerate(labels)]
    expanded = token_weights(index, per_turn)
    if renormalize:
        expanded = renormalize_mean_one(expanded, index >= 0)
    assert torch.allclose(got, expanded, atol=1e-6)
