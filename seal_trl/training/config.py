"""``SEALConfig``: GRPO settings plus the SEAL environment, reweighting and co-evolution options.

Every field is documented once, in its ``metadata["help"]`` (``HfArgumentParser`` turns these into
``--help`` text). Cross-field rules live in ``__post_init__`` and raise ``ValueError`` naming the
offending values. Dict-valued fields also accept a JSON string, which is what a command line gives.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from trl import GRPOConfig

from seal_envs.core.evolver import SETTINGS, Evolver
from seal_envs.core.surface import PRESETS
from seal_envs.openai_agent import TOOLS_IN_PROMPT

from .algorithms import LOSS_TYPES, resolve_advantage_fn
from ..weighting.advantage_weights import APPLY_TO, OFFICIAL_MAX_SCALE, OFFICIAL_MIN_SCALE, TAG_SOURCES, WEIGHTING_MODES

__all__ = ["SEALConfig", "WEIGHTING_MODES", "APPLY_TO", "TAG_SOURCES"]


#: SEALConfig's field for each evolver setting (seal_envs.core.evolver.SETTINGS, where their
#: defaults, help and bounds live): ``evolver_<name>``, the curriculum's under their own names.
EVOLVER_FIELDS = {name: name if name.startswith("curriculum") else f"evolver_{name}" for name in SETTINGS}
_EVOLVER_DEFAULTS = {f.name: f for f in fields(Evolver)}


def _evolver_field(name: str) -> Any:
    f = _EVOLVER_DEFAULTS[name]
    return field(default=f.default, metadata={"help": f"Evolver: {f.metadata['help']}."})


def _as_dict(value: Any, name: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name} must be a dict or a JSON object string, got {value!r}: {e}") from e
        if isinstance(parsed, dict):
            return parsed
    raise ValueError(f"{name} must be a dict or a JSON object string, got {value!r}")


@dataclass
class SEALConfig(GRPOConfig):
    """Configuration of :class:`~seal_trl.training.trainer.SEALGRPOTrainer` (a ``GRPOConfig`` subclass).

    ``max_completion_length`` bounds the *whole* episode (model and environment tokens of every
    turn); ``None`` leaves only ``max_episode_steps`` as the bound.
    """

    # -- environment and rollout -----------------------------------------------------------
    env_id: str = field(
        default="seal/ToolUse-v0",
        metadata={"help": "Gymnasium id of the training environment (`import seal_envs` registers the ids)."},
    )
    env_kwargs: dict[str, Any] | str | None = field(
        default=None,
        metadata={"help": "Keyword arguments for `gym.make(env_id, ...)` (dict or JSON string). `max_steps` "
                          "defaults to `max_episode_steps` so the env itself truncates at the last turn."},
    )
    max_episode_steps: int = field(
        default=8,
        metadata={"help": "Most assistant actions (turns) per episode; one batched `generate` call per turn."},
    )
    max_new_tokens_per_step: int = field(
        default=128, metadata={"help": "Most tokens the model may generate in one turn."}
    )
    tools_in_prompt: str = field(
        default="auto",
        metadata={"help": "Where the tools go when the chat template drops `tools`: `auto` (then into the system "
                          "message, in the env's call format), `always` or `never` (issue 32)."},
    )
    skip_uniform_tasks: int = field(
        default=0,
        metadata={"help": "Online filtering: a task whose last group had equal rewards (no GRPO gradient) is "
                          "replaced, before any episode is spent on it, for this many steps (0: off). See "
                          "`seal_trl.training.sampling`."},
    )
    resample_uniform_groups: int = field(
        default=0,
        metadata={"help": "Dynamic sampling: rounds in which groups that came out with equal rewards are replayed "
                          "on other tasks (0: off). Costs extra episodes; one process only."},
    )
    shared_prefix_loss: bool = field(
        default=True,
        metadata={"help": "Score the loss (and old/reference log-probabilities) with each prompt shared by several "
                          "rows of a micro-batch encoded once, its KV cache expanded to the rows "
                          "(`seal_trl.training.prefix_loss`; same log-probabilities as TRL's to 1e-5). TRL's own path is used "
                          "instead with several processes, PEFT, activation checkpointing, images, MoE aux losses "
                          "or caches other than full attention."},
    )
    # -- the algorithm: how a group's rewards become advantages (seal_trl.training.algorithms) ----------
    advantage_fn: str | None = field(
        default=None,
        metadata={"help": "Replace TRL's group-normalised advantages with this function of the group's env rewards "
                          "([groups, G] -> [groups, G]): `rloo`, `reinforce` or `module:function` (default: TRL's)."},
    )
    # -- diagnosis-guided advantage reweighting ---------------------------------------------
    weighting: str = field(
        default="trajectory",
        metadata={"help": "`none` (vanilla GRPO), `trajectory` (one scale per episode: clamp(mean tag weight), the "
                          "official A-Patch) or `step` (each action's tokens get that action's weight)."},
    )
    tag_weights: dict[str, float] | str | None = field(
        default=None,
        metadata={"help": "Weight per tag (dict or JSON); unknown tags weigh 1.0. Default: the official SEAL "
                          "A-Patch table (official tags)."},
    )
    tag_source: str = field(
        default="official",
        metadata={"help": "Which tag a turn label gives: `official` (the SEAL tag, e.g. spurious_tool_call) or "
                          "`label` (the project's taxonomy, e.g. format_error)."},
    )
    min_scale: float = field(default=OFFICIAL_MIN_SCALE, metadata={"help": "Lower clamp of a weight (> 0)."})
    max_scale: float = field(default=OFFICIAL_MAX_SCALE, metadata={"help": "Upper clamp of a weight."})
    apply_to: str = field(
        default="all",
        metadata={"help": "Reweight episodes with `all` advantages, only `negative` ones or only `positive` ones; "
                          "the others keep weight 1."},
    )
    renormalize: bool = field(
        default=False,
        metadata={"help": "`turn` mode: rescale each episode's token weights to mean 1, so only credit moves "
                          "between its turns."},
    )
    ema_tag_weights: bool = field(
        default=False,
        metadata={"help": "Dynamic tag weights: boost a failure tag by its EMA frequency (see "
                          "`advantage_weights.EMATagWeights`); counts are summed over processes."},
    )
    ema_alpha: float = field(default=0.1, metadata={"help": "EMA rate of the dynamic tag weights, in (0, 1]."})
    ema_strength: float = field(
        default=1.0, metadata={"help": "A tag seen in every turn weighs (1 + strength) x its base weight."}
    )
    dynamic_tag_weights: bool = field(
        default=False,
        metadata={"help": "The paper's dynamic tag weights: each tag's weight moves (EMA) towards base x (1 + alpha x "
                          "prevalence x (1 - mean reward) x confidence) over a window cleared every epoch (see "
                          "`advantage_weights.OfficialDynamicTagWeights`); saved in seal_state.json."},
    )
    dynamic_ema_beta: float = field(default=0.25, metadata={"help": "Dynamic tag weights: EMA step, in [0, 1]."})
    dynamic_prevalence_alpha: float = field(default=1.0, metadata={"help": "Dynamic tag weights: alpha."})
    dynamic_confidence_samples: int = field(
        default=32, metadata={"help": "Dynamic tag weights: occurrences for full confidence in a tag's statistics."}
    )
    budget_normalize: bool = field(
        default=False,
        metadata={"help": "Rescale weights so they sum to the number of model tokens of the generation batch (over "
                          "all processes): reweighting moves gradient, it does not change the step size."},
    )
    # -- co-evolution ---------------------------------------------------------------------
    surface_preset: str = field(
        default="canonical",
        metadata={"help": "The training envs' starting surface: `canonical` or `observation_lite` (the paper's "
                          "static hints: [required] / Allowed values on parameters and one system note). Evaluation "
                          "envs stay canonical; with `evolution` the evolver patches on top of it."},
    )
    evolution: bool = field(
        default=True,
        metadata={"help": "Feed every generation batch's diagnoses to the evolver and apply its surface patches."},
    )
    resume_without_seal_state: bool = field(
        default=False,
        metadata={"help": "Resume from a checkpoint that has no seal_state.json, with a fresh evolver and surface "
                          "(otherwise that is an error)."},
    )
    evolver_window: int = _evolver_field("window")
    evolver_raise_threshold: float = _evolver_field("raise_threshold")
    evolver_fade_threshold: float = _evolver_field("fade_threshold")
    evolver_patience: int = _evolver_field("patience")
    evolver_fade_patience: int = _evolver_field("fade_patience")
    evolver_min_episodes: int = _evolver_field("min_episodes")
    curriculum: bool = _evolver_field("curriculum")
    curriculum_floor: float = _evolver_field("curriculum_floor")
    curriculum_ema: float = _evolver_field("curriculum_ema")
    curriculum_mode: str = _evolver_field("curriculum_mode")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.env_kwargs = _as_dict(self.env_kwargs, "env_kwargs") or {}
        tag_weights = _as_dict(self.tag_weights, "tag_weights")
        self.tag_weights = None if tag_weights is None else {str(k): float(v) for k, v in tag_weights.items()}
        self._check_choices()
        self._check_numbers()
        if self.advantage_fn is not None:
            resolve_advantage_fn(self.advantage_fn)  # a typo fails here, not after the first rollout

    def _check_choices(self) -> None:
        for name, allowed in (("weighting", WEIGHTING_MODES), ("apply_to", APPLY_TO), ("tag_source", TAG_SOURCES),
                              ("surface_preset", PRESETS), ("tools_in_prompt", TOOLS_IN_PROMPT),
                              ("loss_type", LOSS_TYPES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.renormalize and self.weighting != "step":
            raise ValueError(f"renormalize=True only applies to weighting='step', got weighting={self.weighting!r}")
        if self.ema_tag_weights and self.weighting == "none":
            raise ValueError("ema_tag_weights=True needs weighting 'trajectory' or 'step', got weighting='none'")
        if self.dynamic_tag_weights and (self.weighting == "none" or self.ema_tag_weights):
            raise ValueError(f"dynamic_tag_weights=True needs weighting 'trajectory' or 'step' and ema_tag_weights=False, "
                             f"got weighting={self.weighting!r}, ema_tag_weights={self.ema_tag_weights}")
        if not 0 <= self.dynamic_ema_beta <= 1 or self.dynamic_confidence_samples < 1:
            raise ValueError(f"need 0 <= dynamic_ema_beta <= 1 and dynamic_confidence_samples >= 1, got "
                             f"{self.dynamic_ema_beta} and {self.dynamic_confidence_samples}")

    def _check_numbers(self) -> None:
        if not 0 < self.min_scale <= self.max_scale:
            raise ValueError(f"need 0 < min_scale <= max_scale, got min_scale={self.min_scale}, "
                             f"max_scale={self.max_scale}")
        if self.tag_weights is not None and any(w <= 0 for w in self.tag_weights.values()):
            raise ValueError(f"tag_weights must be positive, got {self.tag_weights}")
        if self.max_episode_steps < 1 or self.max_new_tokens_per_step < 1:
            raise ValueError(f"max_episode_steps and max_new_tokens_per_step must be >= 1, got {self.max_episode_steps} and "
                             f"{self.max_new_tokens_per_step}")
        if self.max_completion_length is not None and self.max_completion_length < self.max_new_tokens_per_step:
            raise ValueError(f"max_completion_length ({self.max_completion_length}) bounds the whole episode and must "
                             f"be >= max_new_tokens_per_step ({self.max_new_tokens_per_step})")
        if not 0 < self.ema_alpha <= 1:
            raise ValueError(f"ema_alpha must be in (0, 1], got {self.ema_alpha}")
        try:
            Evolver(**self.evolver_kwargs())  # the evolver checks its own settings
        except ValueError as e:
            raise ValueError(f"evolver settings ({', '.join(EVOLVER_FIELDS.values())}): {e}") from None
        if self.skip_uniform_tasks < 0 or self.resample_uniform_groups < 0:
            raise ValueError(f"skip_uniform_tasks and resample_uniform_groups must be >= 0, got "
                             f"{self.skip_uniform_tasks} and {self.resample_uniform_groups}")
        if self.curriculum and (self.skip_uniform_tasks or self.resample_uniform_groups):
            raise ValueError("curriculum=True lets the env pick tasks; it cannot be combined with skip_uniform_tasks "
                             "or resample_uniform_groups, which pick tasks in the trainer")
        if self.curriculum and self.curriculum_mode == "learnability" and not (
                self.evolution or self.surface_preset != "canonical"):
            raise ValueError("curriculum_mode='learnability' compares the training surface's hints with the canonical "
                             "surface: it needs evolution=True or a surface_preset such as observation_lite")
        if self.env_kwargs.get("max_steps", self.max_episode_steps) < 1:
            raise ValueError(f"env_kwargs['max_steps'] must be >= 1, got {self.env_kwargs['max_steps']}")

    # -- derived values ---------------------------------------------------------------------
    def evolver_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``seal_envs.core.evolver.Evolver``."""
        return {name: getattr(self, field_name) for name, field_name in EVOLVER_FIELDS.items()}

    def make_env_kwargs(self) -> dict[str, Any]:
        """``env_kwargs`` with ``max_steps`` defaulting to ``max_episode_steps``."""
        return {"max_steps": self.max_episode_steps, **self.env_kwargs}
