"""Advantage weights on torch tensors: per-token expansion, renormalisation and the batch budget.

The label -> weight arithmetic (tag tables, per-turn and per-episode scales, the moving tag
weights) lives in :mod:`seal_envs.core.weighting` and :mod:`seal_envs.core.tag_weights`, torch-free,
so that the framework adapters of :mod:`seal_envs.integrations` share it with this trainer; it is
re-exported here under its old names. :mod:`seal_trl.weighting.token_weigher` holds the stateful object the
trainer calls.

Conventions used throughout:

* A *tag* is a label string (official SEAL tags such as ``spurious_tool_call`` or the project's
  own taxonomy such as ``format_error``); unknown tags weigh ``default_weight`` (1.0).
* Tags in ``IGNORED_TAGS`` are faults of the environment or the checker, never the agent's blame:
  they are left out of every mean and a turn carrying only such tags weighs exactly 1.0.
* Weights are multiplicative factors on the advantage; 1.0 everywhere is vanilla GRPO.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from seal_envs.core.tag_weights import OFFICIAL_EXCLUDED_TAGS, UNKNOWN_TAG, EMATagWeights, OfficialDynamicTagWeights
from seal_envs.core.weighting import (
    IGNORED_TAGS,
    OFFICIAL_MAX_SCALE,
    OFFICIAL_MIN_SCALE,
    OFFICIAL_TAG_WEIGHTS,
    ApplyTo,
    expand_step_weights,
    trajectory_scale,
    step_weights,
)

from seal_envs.core.weighting import APPLY_TO, TAG_SOURCES  # noqa: E402
from seal_envs.core.weighting import MODES as WEIGHTING_MODES  # noqa: E402

if TYPE_CHECKING:
    import torch

__all__ = [
    "IGNORED_TAGS",
    "OFFICIAL_MAX_SCALE",
    "OFFICIAL_MIN_SCALE",
    "OFFICIAL_TAG_WEIGHTS",
    "ApplyTo",
    "EMATagWeights",
    "OFFICIAL_EXCLUDED_TAGS",
    "OfficialDynamicTagWeights",
    "UNKNOWN_TAG",
    "budget_normalize",
    "renormalize_mean_one",
    "token_weights",
    "trajectory_scale",
    "step_weights",
]


def token_weights(
    token_step_index: torch.Tensor, per_sequence_step_weights: Sequence[Sequence[float]]
) -> torch.Tensor:
    """Expand per-turn weights onto tokens: ``w[b, t] = weights[b][step_index[b, t]]``.

    ``token_step_index`` is ``[B, T]`` (long) and holds, for every completion token, the index of
    the assistant turn that generated it, or ``-1`` for environment text and padding; those get
    weight 0 so a product with the loss mask is never needed to silence them. Row by row this is
    :func:`seal_envs.core.weighting.expand_step_weights`.
    """
    import numpy as np
    import torch

    if token_step_index.dim() != 2:
        raise ValueError(f"token_step_index must be [B, T], got shape {tuple(token_step_index.shape)}")
    batch = token_step_index.size(0)
    if len(per_sequence_step_weights) != batch:
        raise ValueError(f"got {len(per_sequence_step_weights)} weight lists for a batch of {batch}")
    index = token_step_index.detach().cpu().long().numpy()
    rows = []
    for b, weights in enumerate(per_sequence_step_weights):
        try:
            rows.append(expand_step_weights(index[b], list(weights)))
        except ValueError as e:
            raise ValueError(f"sequence {b}: {e}") from None
    table = np.stack(rows) if rows else np.zeros(index.shape, dtype=np.float32)
    return torch.from_numpy(table).to(token_step_index.device)


def renormalize_mean_one(
    weights: torch.Tensor, mask: torch.Tensor | None = None, *, per_sequence: bool = True
) -> torch.Tensor:
    """Rescale so the mean weight over model tokens is exactly 1 (per sequence by default).

    Why: with per-sequence renormalisation the total push on a trajectory stays what vanilla GRPO
    gives it; only the *credit* moves between its turns. Rows (or a batch) without model tokens, or
    whose weights sum to 0, are returned unchanged. Positions outside ``mask`` keep their value.
    """
    import torch

    mask_f = torch.ones_like(weights) if mask is None else mask.to(weights.dtype)
    if per_sequence and weights.dim() >= 2:
        count = mask_f.sum(dim=-1, keepdim=True)
        total = (weights * mask_f).sum(dim=-1, keepdim=True)
    else:
        count = mask_f.sum()
        total = (weights * mask_f).sum()
    positive = total > 0
    safe_total = torch.where(positive, total, torch.ones_like(total))
    factor = torch.where(positive, count / safe_total, torch.ones_like(total))
    return torch.where(mask_f.bool(), weights * factor, weights)


def budget_normalize(
    weights: torch.Tensor,
    mask: torch.Tensor,
    reduce_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Rescale so the weights over all model tokens of the batch sum to the number of those tokens.

    Rule: ``w' = w * N / sum(w * mask)`` with ``N = sum(mask)``, one factor for the whole batch.
    Why: reweighting should move gradient between trajectories, not change the effective learning
    rate; with TRL's token-normalised losses (``dapo``, ``bnpo``) an unnormalised mean weight of
    1.4 would act like a 1.4x larger step. Unlike :func:`renormalize_mean_one` (per sequence),
    credit may move *across* trajectories here, which is what trajectory-level scales are for.

    ``reduce_fn`` (e.g. ``accelerator.reduce(t, "sum")``) sums the two scalars over processes so
    every rank applies the same factor; without it the budget is that of the local tensors.
    """
    import torch

    mask_f = mask.to(weights.dtype)
    stats = torch.stack([mask_f.sum(), (weights * mask_f).sum()])
    if reduce_fn is not None:
        stats = reduce_fn(stats)
    count, total = float(stats[0]), float(stats[1])
    if total <= 0.0:
        return weights.clone()
    return weights * (count / total)
