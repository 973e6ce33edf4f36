"""Tag weight tables that move with the batches: :class:`EMATagWeights` (this project's rule) and
:class:`OfficialDynamicTagWeights` (the SEAL paper's rule).

Both are ``Mapping[str, float]``, so either can stand wherever a static tag-weight table is
expected (:func:`seal_envs.core.weighting.step_weights`, ``SEALGRPOTrainer``, a framework
adapter). Pure Python: every process that sums the same counts computes the same weights.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .weighting import IGNORED_TAGS, OFFICIAL_MAX_SCALE, OFFICIAL_MIN_SCALE, OFFICIAL_TAG_WEIGHTS, TurnTags, _as_tag_list, _clamp

__all__ = ["EMATagWeights", "OFFICIAL_EXCLUDED_TAGS", "OfficialDynamicTagWeights", "UNKNOWN_TAG"]


class EMATagWeights(Mapping[str, float]):
    """Tag weights that follow an exponential moving average of per-tag failure frequencies.

    Rule (deterministic, documented here because it is the contract):

    * ``update_counts(counts, total)`` observes one batch: ``p[tag] = counts[tag] / total`` is the
      fraction of labels that carry ``tag`` (ignored tags are dropped before counting). Every
      known tag, observed in this batch or not, moves ``ema[tag] = (1 - alpha) * ema[tag] +
      alpha * p[tag]`` starting from 0; ``freq[tag] = ema[tag] / (1 - (1 - alpha) ** n)`` after
      ``n`` updates (Adam-style bias correction, so the first batch is not under-weighted).
    * ``self[tag] = clamp(base[tag] * (1 + strength * freq[tag]), min_scale, max_scale)`` for
      failure tags; tags in ``neutral_tags`` (``pass``, ``ok``) keep their base weight.

    So a failure that persists in a large share of turns is pushed up to ``(1 + strength)`` times
    its base weight, and the boost fades back to the base weight as the agent stops making it.
    The object is a ``Mapping`` and can be passed wherever a ``tag_weights`` table is expected.
    Under several processes, sum the counts over ranks before ``update_counts`` so all ranks agree.
    """

    def __init__(
        self,
        base: Mapping[str, float] = OFFICIAL_TAG_WEIGHTS,
        alpha: float = 0.1,
        strength: float = 1.0,
        min_scale: float = OFFICIAL_MIN_SCALE,
        max_scale: float = OFFICIAL_MAX_SCALE,
        neutral_tags: Iterable[str] = ("pass", "ok"),
        ignored_tags: frozenset[str] = IGNORED_TAGS,
        default_weight: float = 1.0,
    ) -> None:
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        _clamp(1.0, min_scale, max_scale)  # validates the bounds
        self.base = dict(base)
        self.alpha = float(alpha)
        self.strength = float(strength)
        self.min_scale = float(min_scale)
        self.max_scale = float(max_scale)
        self.neutral_tags = frozenset(neutral_tags)
        self.ignored_tags = frozenset(ignored_tags)
        self.default_weight = float(default_weight)
        self.ema: dict[str, float] = {}
        self.num_updates = 0

    # -- observation ---------------------------------------------------------------------------
    def update(self, tags: Iterable[TurnTags | None]) -> None:
        """Observe one batch of labels (a flat iterable; a turn may carry a list of tags)."""
        flat = [tag for item in tags for tag in _as_tag_list(item) if tag not in self.ignored_tags]
        self.update_counts(Counter(flat), len(flat))

    def update_counts(self, counts: Mapping[str, float], total: float) -> None:
        """Observe one batch given per-tag counts and the number of labels counted."""
        keep = {tag: float(c) for tag, c in counts.items() if tag not in self.ignored_tags}
        for tag in sorted(set(self.ema) | set(keep)):  # sorted: identical float ops on every rank
            p = keep.get(tag, 0.0) / total if total > 0 else 0.0
            self.ema[tag] = (1.0 - self.alpha) * self.ema.get(tag, 0.0) + self.alpha * p
        self.num_updates += 1

    # -- weights -------------------------------------------------------------------------------
    def frequency(self, tag: str) -> float:
        """Bias-corrected EMA frequency of ``tag`` (0.0 before any update)."""
        if self.num_updates == 0:
            return 0.0
        return self.ema.get(tag, 0.0) / (1.0 - (1.0 - self.alpha) ** self.num_updates)

    def weight(self, tag: str) -> float:
        base = float(self.base.get(tag, self.default_weight))
        if tag in self.neutral_tags or tag in self.ignored_tags:
            return base
        return _clamp(base * (1.0 + self.strength * self.frequency(tag)), self.min_scale, self.max_scale)

    def weights(self) -> dict[str, float]:
        """Current weight of every tag known from the base table or from observations."""
        return {tag: self.weight(tag) for tag in sorted(set(self.base) | set(self.ema))}

    def __getitem__(self, tag: str) -> float:
        return self.weight(tag)

    def get(self, tag: str, default: Any = None) -> Any:  # unknown tags still get a weight
        return self.weight(tag)

    def __contains__(self, tag: object) -> bool:
        return tag in self.base or tag in self.ema

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(set(self.base) | set(self.ema)))

    def __len__(self) -> int:
        return len(set(self.base) | set(self.ema))

    # -- checkpointing -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "base": dict(self.base),
            "alpha": self.alpha,
            "strength": self.strength,
            "min_scale": self.min_scale,
            "max_scale": self.max_scale,
            "neutral_tags": sorted(self.neutral_tags),
            "ignored_tags": sorted(self.ignored_tags),
            "default_weight": self.default_weight,
            "ema": dict(sorted(self.ema.items())),
            "num_updates": self.num_updates,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.base = dict(state["base"])
        self.alpha = float(state["alpha"])
        self.strength = float(state["strength"])
        self.min_scale = float(state["min_scale"])
        self.max_scale = float(state["max_scale"])
        self.neutral_tags = frozenset(state["neutral_tags"])
        self.ignored_tags = frozenset(state["ignored_tags"])
        self.default_weight = float(state["default_weight"])
        self.ema = {str(k): float(v) for k, v in state["ema"].items()}
        self.num_updates = int(state["num_updates"])



#: The tags the official dynamic weights leave out of prevalence (their target weight is 1.0).
OFFICIAL_EXCLUDED_TAGS: frozenset[str] = frozenset({"checker_error", "gt_error"})
UNKNOWN_TAG = "unknown"  # what the official code records for a trajectory without tags


class OfficialDynamicTagWeights(Mapping[str, float]):
    """The official SEAL dynamic tag weights: each failure tag's weight drifts towards
    ``base x (1 + alpha x prevalence x stagnation x confidence)``.

    Why this exists next to :class:`EMATagWeights`: it is the rule of the paper's run, so a run
    that claims to reproduce the paper must use it. Per tag, over a window of trajectories:
    ``prevalence`` = its occurrences / all non-excluded tag occurrences, ``stagnation`` = 1 - the
    mean reward of the trajectories it occurred in (once per occurrence), ``confidence`` =
    ``min(1, count / confidence_samples)``. ``pass`` targets its base weight, ``checker_error`` and
    ``gt_error`` target 1.0; targets are clamped to ``[min_scale, max_scale]`` and the weight
    moves ``w = (1 - beta) w + beta target`` from the base weight. :meth:`update` runs once per
    rollout batch after :meth:`observe`. The window is cleared when a batch of a new epoch (a
    pass over the training set) arrives: ``observe(..., epoch=)`` reads the epoch from the
    trainer's state, so a run resumed from a checkpoint clears it at the same batch as an
    uninterrupted one. The statistics over all epochs are kept and serve when the window is
    empty. A batch with no countable tag uses the base weights and leaves the running weights
    alone, as the official code does.
    """

    def __init__(self, base: Mapping[str, float] = OFFICIAL_TAG_WEIGHTS, ema_beta: float = 0.25,
                 prevalence_alpha: float = 1.0, confidence_samples: int = 32,
                 min_scale: float = OFFICIAL_MIN_SCALE, max_scale: float = OFFICIAL_MAX_SCALE) -> None:
        if not 0.0 <= ema_beta <= 1.0:
            raise ValueError(f"ema_beta must be in [0, 1], got {ema_beta}")
        if confidence_samples < 1:
            raise ValueError(f"confidence_samples must be >= 1, got {confidence_samples}")
        _clamp(1.0, min_scale, max_scale)  # validates the bounds
        self.base = dict(base)
        self.ema_beta, self.prevalence_alpha = float(ema_beta), float(prevalence_alpha)
        self.confidence_samples = int(confidence_samples)
        self.min_scale, self.max_scale = float(min_scale), float(max_scale)
        self.window: dict[str, list[float]] = {}  # tag -> [count, reward sum]
        self.total: dict[str, list[float]] = {}
        self.dynamic: dict[str, float] = {}
        self.active: dict[str, float] = dict(self.base)
        self.epoch: int | None = None  # the epoch of the batches in the window

    @staticmethod
    def trajectory_stats(trajectories: Iterable[tuple[Sequence[str], float]]) -> tuple[Counter, Counter]:
        """``(count, reward sum)`` per tag over ``(tags, reward)`` trajectories: each occurrence of
        a tag records its trajectory's reward. Sums, so they add up over processes."""
        counts: Counter = Counter()
        rewards: Counter = Counter()
        for tags, reward in trajectories:
            for tag in list(tags) or [UNKNOWN_TAG]:
                counts[tag] += 1
                rewards[tag] += float(reward)
        return counts, rewards

    def observe(self, counts: Mapping[str, float], reward_sums: Mapping[str, float], epoch: int | None = None) -> None:
        if epoch is not None:
            if self.epoch is not None and epoch != self.epoch:
                self.end_epoch()
            self.epoch = int(epoch)
        for table in (self.window, self.total):
            for tag in sorted(counts):
                entry = table.setdefault(tag, [0.0, 0.0])
                entry[0] += float(counts[tag])
                entry[1] += float(reward_sums.get(tag, 0.0))

    def target(self, tag: str, source: Mapping[str, Sequence[float]], total: float) -> float:
        base = float(self.base.get(tag, 1.0))
        if tag in OFFICIAL_EXCLUDED_TAGS:
            raw = 1.0
        elif tag == "pass":
            raw = base
        else:
            count, reward_sum = source.get(tag, (0.0, 0.0))
            mean_reward = reward_sum / count if count else 0.0
            confidence = min(1.0, count / self.confidence_samples)
            raw = base * (1.0 + self.prevalence_alpha * (count / total) * (1.0 - mean_reward) * confidence)
        return _clamp(raw, self.min_scale, self.max_scale)

    def update(self) -> dict[str, float]:
        """Move every tag's weight one EMA step towards its target; the weights this batch uses."""
        source = self.window or self.total
        total = sum(c for tag, (c, _) in source.items() if tag not in OFFICIAL_EXCLUDED_TAGS)
        if total <= 0:
            self.active = dict(self.base)
            return dict(self.active)
        for tag in sorted(set(self.base) | set(source) | set(self.dynamic)):
            previous = self.dynamic.get(tag, float(self.base.get(tag, 1.0)))
            self.dynamic[tag] = (1.0 - self.ema_beta) * previous + self.ema_beta * self.target(tag, source, total)
        self.active = dict(self.dynamic)
        return dict(self.active)

    def end_epoch(self) -> None:
        self.window = {}

    def __getitem__(self, tag: str) -> float:
        return self.active.get(tag, float(self.base.get(tag, 1.0)))

    def get(self, tag: str, default: Any = None) -> Any:  # unknown tags still get a weight
        return self[tag]

    def __contains__(self, tag: object) -> bool:
        return tag in self.active or tag in self.base

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(set(self.active) | set(self.base)))

    def __len__(self) -> int:
        return len(set(self.active) | set(self.base))

    def state_dict(self) -> dict[str, Any]:
        return {"kind": "official_dynamic", "base": dict(self.base), "ema_beta": self.ema_beta,
                "prevalence_alpha": self.prevalence_alpha, "confidence_samples": self.confidence_samples,
                "min_scale": self.min_scale, "max_scale": self.max_scale,
                "window": {k: list(v) for k, v in sorted(self.window.items())},
                "total": {k: list(v) for k, v in sorted(self.total.items())},
                "dynamic": dict(sorted(self.dynamic.items())), "active": dict(sorted(self.active.items())),
                "epoch": self.epoch}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.__init__(state["base"], state["ema_beta"], state["prevalence_alpha"], state["confidence_samples"],
                      state["min_scale"], state["max_scale"])
        self.window = {str(k): [float(c), float(r)] for k, (c, r) in state["window"].items()}
        self.total = {str(k): [float(c), float(r)] for k, (c, r) in state["total"].items()}
        self.dynamic = {str(k): float(v) for k, v in state["dynamic"].items()}
        self.active = {str(k): float(v) for k, v in state["active"].items()}
        self.epoch = None if state.get("epoch") is None else int(state["epoch"])
