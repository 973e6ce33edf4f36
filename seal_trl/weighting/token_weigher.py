"""From an episode's turn labels to per-token advantage weights ``[B, T]`` (uses :mod:`seal_trl.weighting.advantage_weights`).

``TokenWeigher.weights(step_index, step_labels, advantages)`` implements the three modes of
:class:`~seal_trl.training.config.SEALConfig` by calling, episode by episode, the framework-neutral
:func:`seal_envs.core.weighting.token_advantage_weights` (the one implementation the framework
adapters share); what is left here is the batch: EMA/dynamic tag weights and ``budget_normalize``:

* ``none``: 1 on every model token;
* ``trajectory``: one scale per episode, ``clamp(mean tag weight)`` (official A-Patch). With
  ``tag_source="official"`` the mean runs over the episode's official per-user-turn tags
  (``info["official_turn_tags"]``, :mod:`seal_envs.core.official`), which is what makes the scale
  equal the official one; an env without them falls back to one tag per assistant step;
* ``turn``: each turn's tokens get ``clamp(weight of that turn's tag)``; optionally renormalized to
  mean 1 per episode.

``apply_to`` leaves weight 1 on episodes whose advantage has the other sign; ``budget_normalize``
then rescales so the weights of all model tokens of the generation batch (every process) sum to
their count. Environment tokens (``step_index == -1``) and padding always weigh 0.

In ``turn`` mode a step's tag is its primary label (``tag_source="label"``) or the official
SEAL tag of that label (``"official"``, the default, which the official tag-weight table is keyed by).

Tag weights are static, or move with the batches: ``ema`` (:class:`~seal_trl.weighting.advantage_weights.EMATagWeights`,
this project's rule) or ``dynamic`` (:class:`~seal_trl.weighting.advantage_weights.OfficialDynamicTagWeights`,
the paper's rule), never both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from seal_envs.core.weighting import WeightingConfig, episode_tags, episode_step_weights, token_advantage_weights
from seal_envs.core.weighting import step_tag as step_tag

from .advantage_weights import (
    APPLY_TO,
    TAG_SOURCES,
    WEIGHTING_MODES,
    OFFICIAL_TAG_WEIGHTS,
    EMATagWeights,
    OfficialDynamicTagWeights,
    budget_normalize,
)

if TYPE_CHECKING:
    import torch

__all__ = ["TokenWeigher", "step_tag", "WEIGHER_STATE_SCHEMA"]

# The weigher part of the trainer's seal_state.json (TokenWeigher.state_dict()), checked on load.
WEIGHER_FORMAT, WEIGHER_FORMAT_VERSION = "seal-token-weigher", 1
_NUM = {"type": "number"}
_TABLE = {"type": "object", "additionalProperties": _NUM}
_PAIRS = {"type": "object", "additionalProperties": {"type": "array", "items": _NUM, "minItems": 2, "maxItems": 2}}
_TAGS = {"type": "array", "items": {"type": "string"}}
_EMA_SCHEMA = {  # EMATagWeights.state_dict()
    "type": "object",
    "required": ["base", "alpha", "strength", "min_scale", "max_scale", "neutral_tags", "ignored_tags",
                 "default_weight", "ema", "num_updates"],
    "properties": {
        "base": _TABLE, "alpha": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "strength": _NUM,
        "min_scale": _NUM, "max_scale": _NUM, "neutral_tags": _TAGS, "ignored_tags": _TAGS,
        "default_weight": _NUM, "ema": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0}},
        "num_updates": {"type": "integer", "minimum": 0},
    },
}
_DYNAMIC_SCHEMA = {  # OfficialDynamicTagWeights.state_dict()
    "type": "object",
    "required": ["kind", "base", "ema_beta", "prevalence_alpha", "confidence_samples", "min_scale", "max_scale",
                 "window", "total", "dynamic", "active", "epoch"],
    "properties": {
        "kind": {"const": "official_dynamic"}, "base": _TABLE,
        "ema_beta": {"type": "number", "minimum": 0, "maximum": 1}, "prevalence_alpha": _NUM,
        "confidence_samples": {"type": "integer", "minimum": 1}, "min_scale": _NUM, "max_scale": _NUM,
        "window": _PAIRS, "total": _PAIRS, "dynamic": _TABLE, "active": _TABLE,
        "epoch": {"type": ["integer", "null"], "minimum": 0},
    },
}
WEIGHER_STATE_SCHEMA = {
    "type": "object",
    "required": ["ema", "dynamic"],
    "properties": {
        "format": {"const": WEIGHER_FORMAT}, "format_version": {"const": WEIGHER_FORMAT_VERSION},
        # null when off; "required" and "properties" only constrain objects, so errors name the inner field
        "ema": {**_EMA_SCHEMA, "type": ["object", "null"]},
        "dynamic": {**_DYNAMIC_SCHEMA, "type": ["object", "null"]},
    },
}


class TokenWeigher:
    """Per-token weights for one generation batch; holds the (optional) dynamic EMA tag weights."""

    def __init__(self, mode: str = "trajectory", tag_weights: Mapping[str, float] | None = None, *,
                 tag_source: str = "official", min_scale: float = 0.5, max_scale: float = 2.0,
                 apply_to: str = "all", renormalize: bool = False, ema: EMATagWeights | None = None,
                 budget_normalize: bool = False, dynamic: OfficialDynamicTagWeights | None = None) -> None:
        if ema is not None and dynamic is not None:
            raise ValueError("choose one of the EMA tag weights and the official dynamic tag weights")
        for name, value, allowed in (("mode", mode, WEIGHTING_MODES), ("apply_to", apply_to, APPLY_TO),
                                     ("tag_source", tag_source, TAG_SOURCES)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        self.mode = mode
        self.static_weights = dict(OFFICIAL_TAG_WEIGHTS if tag_weights is None else tag_weights)
        self.tag_source = tag_source
        self.min_scale, self.max_scale = min_scale, max_scale
        self.apply_to = apply_to
        self.renormalize = renormalize
        self.ema = ema
        self.dynamic = dynamic
        self.budget = budget_normalize

    @classmethod
    def from_config(cls, args: Any) -> TokenWeigher:
        ema = None
        if args.ema_tag_weights:
            ema = EMATagWeights(base=args.tag_weights or OFFICIAL_TAG_WEIGHTS, alpha=args.ema_alpha,
                                strength=args.ema_strength, min_scale=args.min_scale, max_scale=args.max_scale)
        dynamic = None
        if getattr(args, "dynamic_tag_weights", False):
            dynamic = OfficialDynamicTagWeights(
                base=args.tag_weights or OFFICIAL_TAG_WEIGHTS, ema_beta=args.dynamic_ema_beta,
                prevalence_alpha=args.dynamic_prevalence_alpha, confidence_samples=args.dynamic_confidence_samples,
                min_scale=args.min_scale, max_scale=args.max_scale)
        return cls(args.weighting, args.tag_weights, tag_source=args.tag_source, min_scale=args.min_scale,
                   max_scale=args.max_scale, apply_to=args.apply_to, renormalize=args.renormalize, ema=ema,
                   budget_normalize=args.budget_normalize, dynamic=dynamic)

    @property
    def tag_weights(self) -> Mapping[str, float]:
        if self.dynamic is not None:
            return self.dynamic
        return self.ema if self.ema is not None else self.static_weights

    def tags(self, labels: Sequence[Mapping[str, Any] | None]) -> list[str | None]:
        return [step_tag(label, self.tag_source) for label in labels]

    @property
    def config(self) -> WeightingConfig:
        """This weigher's settings as the framework-neutral config (with its current tag weights)."""
        return WeightingConfig(self.mode, self.tag_weights, self.tag_source, self.min_scale, self.max_scale,
                               self.apply_to, self.renormalize)

    def episode_tags(self, labels: Sequence[Mapping[str, Any] | None],
                     official: Sequence[str] | None = None) -> list[str]:
        """The tags an episode is weighed (and counted) by: its official per-user-turn tags in
        ``trajectory`` mode with official tags, else one tag per labelled step."""
        return episode_tags(labels, self.config, official)

    def tag_stats(self, batch_labels: Sequence[Sequence[Mapping[str, Any] | None]],
                  batch_official: Sequence[Sequence[str] | None] | None = None,
                  rewards: Sequence[float] | None = None) -> tuple[Counter, Counter]:
        """Per tag of the batch: occurrences, and the sum of their episodes' rewards (to gather)."""
        official = list(batch_official) if batch_official is not None else [None] * len(batch_labels)
        rewards = list(rewards) if rewards is not None else [0.0] * len(batch_labels)
        return OfficialDynamicTagWeights.trajectory_stats(
            (self.episode_tags(labels, tags), reward) for labels, tags, reward in zip(batch_labels, official, rewards))

    def tag_counts(self, batch_labels: Sequence[Sequence[Mapping[str, Any] | None]],
                   batch_official: Sequence[Sequence[str] | None] | None = None) -> Counter:
        official = list(batch_official) if batch_official is not None else [None] * len(batch_labels)
        return Counter(t for labels, tags in zip(batch_labels, official) for t in self.episode_tags(labels, tags))

    def observe(self, counts: Mapping[str, float], reward_sums: Mapping[str, float] | None = None,
                epoch: int | None = None) -> None:
        """One training batch's tag statistics (summed over processes) move the EMA weights, or
        the official dynamic weights (observe, then update: the batch is weighed with the result;
        ``epoch``, the trainer's, clears their window when it changes)."""
        if self.ema is not None:
            kept = {t: c for t, c in counts.items() if t not in self.ema.ignored_tags}
            self.ema.update_counts(kept, sum(kept.values()))
        if self.dynamic is not None:
            self.dynamic.observe(counts, reward_sums or {}, epoch)
            self.dynamic.update()

    def step_weights(self, labels: Sequence[Mapping[str, Any] | None], advantage: float,
                     official: Sequence[str] | None = None) -> list[float]:
        """One weight per turn (assistant step) of an episode."""
        return episode_step_weights(labels, self.config, advantage=advantage, official_turn_tags=official)

    def weights(self, step_index: torch.Tensor, batch_labels: Sequence[Sequence[Mapping[str, Any] | None]],
                advantages: torch.Tensor, reduce_fn: Callable[[torch.Tensor], torch.Tensor] | None = None,
                batch_official: Sequence[Sequence[str] | None] | None = None) -> torch.Tensor:
        """``[B, T]`` weights: ``step_index[b, t]`` is the turn of token ``t`` (-1: env token or padding);
        ``batch_official[b]`` is episode ``b``'s ``info["official_turn_tags"]`` (None where absent)."""
        import numpy as np
        import torch

        config = self.config
        official = list(batch_official) if batch_official is not None else [None] * len(batch_labels)
        index = step_index.detach().cpu().long().numpy()
        adv = advantages.detach().cpu().double().numpy()
        rows = [token_advantage_weights(index[b], labels, config, advantage=float(adv[b]), official_turn_tags=official[b])
                for b, labels in enumerate(batch_labels)]
        table = np.stack(rows) if rows else np.zeros(index.shape, dtype=np.float32)
        weights = torch.from_numpy(table).to(advantages.device)
        if self.budget:
            weights = budget_normalize(weights, step_index.to(weights.device) >= 0, reduce_fn)
        return weights

    # -- checkpointing --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"format": WEIGHER_FORMAT, "format_version": WEIGHER_FORMAT_VERSION,
                "ema": None if self.ema is None else self.ema.state_dict(),
                "dynamic": None if self.dynamic is None else self.dynamic.state_dict()}

    @staticmethod
    def check_state(state: Any, source: str = "token weigher state", prefix: str = "") -> dict[str, Any]:
        """``state`` if it is a valid :meth:`state_dict` (files without ``format_version`` read as
        version 1), else a :class:`~seal_envs.core.statefile.StateFileError` naming ``source`` and
        the field (after ``prefix``, ``"weigher/"`` inside the trainer's ``seal_state.json``)."""
        from seal_envs.core import statefile

        return statefile.check(dict(state) if isinstance(state, Mapping) else state, WEIGHER_STATE_SCHEMA, source,
                               WEIGHER_FORMAT, WEIGHER_FORMAT_VERSION, prefix)

    def load_state_dict(self, state: Mapping[str, Any], source: str = "token weigher state",
                        prefix: str = "") -> None:
        state = self.check_state(state, source, prefix)
        if self.ema is not None and state.get("ema") is not None:
            self.ema.load_state_dict(state["ema"])
        if self.dynamic is not None and state.get("dynamic") is not None:
            self.dynamic.load_state_dict(state["dynamic"])
