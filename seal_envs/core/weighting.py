"""SEAL's step weighting, framework-neutral: from per-turn labels to per-token advantage weights.

Why here, in ``core`` (pure Python plus numpy, no torch): every trainer that wants SEAL's credit
assignment needs the same arithmetic. ``SEALGRPOTrainer`` (through
:class:`seal_trl.weighting.token_weigher.TokenWeigher`) and the framework adapters of
:mod:`seal_envs.integrations` (verl, OpenRLHF, ...) all call :func:`token_advantage_weights`, so
there is one implementation to test and to keep in step with the paper.

A policy-gradient loss multiplies each token's advantage ``A`` by ``w[t]``; ``w[t]`` comes from the
failure labels of the assistant turn that produced token ``t``:

* a *step* is one assistant action (one ``env.step``); its label is ``info["step_labels"][k]``;
* a *tag* is a label's name in the official SEAL taxonomy (``tag_source="official"``, e.g.
  ``spurious_tool_call``) or in this project's (``"label"``, e.g. ``unknown_tool``); unknown tags
  weigh 1.0, and ``IGNORED_TAGS`` (faults of the environment or checker) never weigh;
* modes (:class:`WeightingConfig`): ``none`` (1 everywhere: plain GRPO), ``trajectory`` (one
  scale per episode, ``clamp(mean tag weight)``: the official A-Patch rule, over the episode's
  official per-user-turn tags when given), ``step`` (each step its own ``clamp(tag weight)``,
  optionally renormalised to mean 1 over the episode's model tokens);
* tokens the model did not generate (tool results, user text, padding) have turn index ``-1`` and
  weight 0, so no separate product with a loss mask is needed.

Batch-level steps that need every process (``budget_normalize`` in :mod:`seal_trl`) stay with the
trainer; everything per episode is here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = [
    "APPLY_TO",
    "IGNORED_TAGS",
    "MODES",
    "OFFICIAL_MAX_SCALE",
    "OFFICIAL_MIN_SCALE",
    "OFFICIAL_TAG_WEIGHTS",
    "TAG_SOURCES",
    "ApplyTo",
    "WeightingConfig",
    "episode_tags",
    "episode_step_weights",
    "expand_step_weights",
    "token_advantage_weights",
    "trajectory_scale",
    "step_index_from_mask",
    "step_tag",
    "step_weights",
]

#: The official SEAL A-Patch tag weights (BFCL run). Tags not listed weigh 1.0.
OFFICIAL_TAG_WEIGHTS: Mapping[str, float] = {
    "spurious_tool_call": 2.0,
    "correct_abstention": 1.8,
    "empty_turn_model_response": 1.5,
    "state_mismatch": 1.0,
    "response_mismatch": 0.9,
    "instance_mismatch": 0.6,
    "pass": 1.0,
}
OFFICIAL_MIN_SCALE = 0.5
OFFICIAL_MAX_SCALE = 2.0

#: Environment/checker faults: excluded from means, never weighted.
IGNORED_TAGS: frozenset[str] = frozenset({"env_error", "checker_error", "gt_error"})

ApplyTo = Literal["all", "negative", "positive"]
TurnTags = str | Sequence[str]


def _clamp(value: float, low: float, high: float) -> float:
    if low > high:
        raise ValueError(f"min_scale ({low}) must not exceed max_scale ({high})")
    return min(max(value, low), high)


def _as_tag_list(tags: TurnTags | None) -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        return [tags]
    return list(tags)


def _mean_weight(
    tags: Iterable[str], tag_weights: Mapping[str, float], default_weight: float, ignored: frozenset[str]
) -> float | None:
    values = [float(tag_weights.get(tag, default_weight)) for tag in tags if tag not in ignored]
    return sum(values) / len(values) if values else None


def trajectory_scale(
    tags: Iterable[str],
    tag_weights: Mapping[str, float] = OFFICIAL_TAG_WEIGHTS,
    min_scale: float = OFFICIAL_MIN_SCALE,
    max_scale: float = OFFICIAL_MAX_SCALE,
    *,
    default_weight: float = 1.0,
    ignored_tags: frozenset[str] = IGNORED_TAGS,
) -> float:
    """One scale for a whole trajectory: ``clamp(mean tag weight, min_scale, max_scale)``.

    This is the official A-Patch rule. A trajectory with no (non-ignored) tags keeps scale 1.0
    (clamped), because absence of a diagnosis is no evidence either way.
    """
    mean = _mean_weight(tags, tag_weights, default_weight, ignored_tags)
    return _clamp(1.0 if mean is None else mean, min_scale, max_scale)


def step_weights(
    turn_tags: Sequence[TurnTags | None],
    advantage: float,
    tag_weights: Mapping[str, float] = OFFICIAL_TAG_WEIGHTS,
    apply_to: ApplyTo = "all",
    min_scale: float = OFFICIAL_MIN_SCALE,
    max_scale: float = OFFICIAL_MAX_SCALE,
    *,
    default_weight: float = 1.0,
    ignored_tags: frozenset[str] = IGNORED_TAGS,
) -> list[float]:
    """Per-turn weights: ``clamp(mean weight of that turn's tags)``, or 1.0 where not applied.

    ``apply_to`` restricts reweighting to trajectories whose advantage has the given sign
    (``"negative"``: ``advantage < 0``; ``"positive"``: ``advantage > 0``). The point of
    ``"negative"`` is to push harder *away* from the turn that caused a failure without also
    amplifying the same behaviour when it happened to sit in a successful trajectory. A zero
    advantage matches neither sign, so its weights are 1.0 (they are irrelevant anyway).
    """
    if apply_to not in ("all", "negative", "positive"):
        raise ValueError(f"apply_to must be 'all', 'negative' or 'positive', got {apply_to!r}")
    applies = apply_to == "all" or (apply_to == "negative" and advantage < 0) or (
        apply_to == "positive" and advantage > 0
    )
    if not applies:
        return [1.0] * len(turn_tags)
    weights = []
    for tags in turn_tags:
        mean = _mean_weight(_as_tag_list(tags), tag_weights, default_weight, ignored_tags)
        weights.append(1.0 if mean is None else _clamp(mean, min_scale, max_scale))
    return weights



MODES = ("none", "trajectory", "step")
APPLY_TO = ("all", "negative", "positive")
TAG_SOURCES = ("official", "label")


def step_tag(label: Mapping[str, Any] | None, tag_source: str = "official") -> str | None:
    """The tag of one turn label dict (``info["step_labels"][k]``), or ``None`` for a missing label."""
    if label is None:
        return None
    if tag_source == "label":
        return str(label["label"])
    from .official import official_tag_of_step
    from .types import StepLabel

    return official_tag_of_step(StepLabel.from_dict(label))


@dataclass(frozen=True)
class WeightingConfig:
    """How labels become weights; the fields mean what ``SEALConfig``'s fields of the same name mean.

    ``tag_weights`` is any ``Mapping[str, float]``: a static table (``None``: the official one), or
    a moving one (:class:`~seal_envs.core.tag_weights.EMATagWeights`,
    :class:`~seal_envs.core.tag_weights.OfficialDynamicTagWeights`) that the caller updates.
    """

    mode: str = "trajectory"
    tag_weights: Mapping[str, float] | None = field(default=None, compare=False)
    tag_source: str = "official"
    min_scale: float = OFFICIAL_MIN_SCALE
    max_scale: float = OFFICIAL_MAX_SCALE
    apply_to: str = "all"
    renormalize: bool = False

    def __post_init__(self) -> None:
        for name, allowed in (("mode", MODES), ("apply_to", APPLY_TO), ("tag_source", TAG_SOURCES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if not 0 < self.min_scale <= self.max_scale:
            raise ValueError(f"need 0 < min_scale <= max_scale, got min_scale={self.min_scale}, "
                             f"max_scale={self.max_scale}")
        if self.renormalize and self.mode != "step":
            raise ValueError(f"renormalize=True only applies to mode='turn', got mode={self.mode!r}")

    @property
    def table(self) -> Mapping[str, float]:
        return OFFICIAL_TAG_WEIGHTS if self.tag_weights is None else self.tag_weights

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> WeightingConfig:
        """From a plain mapping (a YAML/JSON config section); an unknown key is an error naming it."""
        values = dict(values or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown weighting option(s) {unknown}; known: {sorted(known)}")
        return cls(**values)

    def applies(self, advantage: float | None) -> bool:
        """Whether an episode with this advantage is reweighted (``apply_to``)."""
        if self.apply_to == "all":
            return True
        if advantage is None:
            raise ValueError(f"apply_to={self.apply_to!r} needs the episode's advantage; pass advantage=")
        return advantage < 0 if self.apply_to == "negative" else advantage > 0


def episode_tags(labels: Sequence[Mapping[str, Any] | None], config: WeightingConfig = WeightingConfig(),
                 official_turn_tags: Sequence[str] | None = None) -> list[str]:
    """The tags an episode is weighed (and counted) by: its official per-user-turn tags in
    ``trajectory`` mode with official tags, else one tag per labelled turn."""
    if config.mode == "trajectory" and config.tag_source == "official" and official_turn_tags is not None:
        return [str(t) for t in official_turn_tags]
    return [t for t in (step_tag(lb, config.tag_source) for lb in labels) if t is not None]


def episode_step_weights(labels: Sequence[Mapping[str, Any] | None], config: WeightingConfig = WeightingConfig(),
                         *, advantage: float | None = None, official_turn_tags: Sequence[str] | None = None
                         ) -> list[float]:
    """One weight per turn (assistant step) of an episode; a turn without a label (``None``) weighs 1.

    ``advantage`` is needed only when ``config.apply_to`` is not ``"all"`` (a zero advantage
    matches neither sign: weights 1).
    """
    kw = {"min_scale": config.min_scale, "max_scale": config.max_scale}
    if config.mode == "none":
        return [1.0] * len(labels)
    if config.mode == "step":
        tags = [step_tag(lb, config.tag_source) for lb in labels]
        if not config.applies(advantage):
            return [1.0] * len(tags)
        return step_weights(tags, 0.0, config.table, "all", **kw)
    scale = trajectory_scale(episode_tags(labels, config, official_turn_tags), config.table, **kw) \
        if config.applies(advantage) else 1.0
    return [scale] * len(labels)


def _turn_index(token_turn: Sequence[int] | np.ndarray) -> np.ndarray:
    index = np.asarray(token_turn)
    if index.ndim != 1:
        raise ValueError(f"token_turn must be one episode's 1-D turn index, got shape {index.shape}")
    if index.size and not np.issubdtype(index.dtype, np.integer):
        raise ValueError(f"token_turn must hold integers (a turn index per token, -1 elsewhere), got {index.dtype}")
    index = index.astype(np.int64, copy=False)
    if index.size and int(index.min()) < -1:
        raise ValueError("token_turn must be >= -1 (-1: a token the model did not generate)")
    return index


def expand_step_weights(token_turn: Sequence[int] | np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """Per-turn weights onto tokens: ``w[t] = weights[token_turn[t]]``, 0 where ``token_turn[t] == -1``."""
    index = _turn_index(token_turn)
    if index.size and int(index.max()) >= len(weights):
        raise ValueError(f"a token of turn {int(index.max())} but only {len(weights)} turn weights")
    table = np.concatenate([[0.0], np.asarray(weights, dtype=np.float64)])  # slot 0: "no turn"
    return table[index + 1].astype(np.float32)


def token_advantage_weights(token_turn: Sequence[int] | np.ndarray, labels: Sequence[Mapping[str, Any] | None],
                            config: WeightingConfig = WeightingConfig(), *, advantage: float | None = None,
                            official_turn_tags: Sequence[str] | None = None) -> np.ndarray:
    """One episode's per-token advantage weights (``float32``, the length of ``token_turn``).

    ``token_turn[t]`` is the turn (index into ``labels``, i.e. ``info["step_labels"]``) whose
    action token ``t`` belongs to, or -1 for a token the model did not generate; build it from a
    response mask with :func:`step_index_from_mask`. Turns beyond ``labels`` (an episode cut
    before its labels) weigh 1. ``official_turn_tags`` is ``info["official_turn_tags"]``.
    """
    index = _turn_index(token_turn)
    needed = int(index.max()) + 1 if index.size else 0
    padded = list(labels) + [None] * max(0, needed - len(labels))
    weights = expand_step_weights(index, episode_step_weights(padded, config, advantage=advantage,
                                                              official_turn_tags=official_turn_tags))
    if config.renormalize:
        model = index >= 0
        total = float(weights[model].sum(dtype=np.float64))
        if total > 0:
            weights[model] *= np.float32(model.sum() / total)
    return weights


def step_index_from_mask(mask: Sequence[int] | np.ndarray) -> np.ndarray:
    """A turn index from a 0/1 response mask (verl's ``response_mask``, OpenRLHF's action mask):
    each run of 1s is the next turn, 0s are -1. Right for loops that append one generation per
    env step (every adapter in :mod:`seal_envs.integrations`)."""
    m = np.asarray(mask).astype(bool)
    starts = m & ~np.concatenate([[False], m[:-1]])
    return np.where(m, np.cumsum(starts) - 1, -1).astype(np.int64)
