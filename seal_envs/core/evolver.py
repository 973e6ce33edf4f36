"""The environment side of co-evolution: turn diagnoses into surface patches (and a curriculum).

Statistics are counts, so they do not depend on the order in which episodes arrive and merge by
addition across processes: every rank that merges the same pending counts and calls
:meth:`Evolver.update` proposes the same patches. ``observe`` adds episodes to the pending
batch; ``update`` closes the batch into a sliding window of the last ``window`` batches, and for
every (channel, scope) compares the failure rate in the window with two thresholds:

- rate >= ``raise_threshold`` for ``patience`` updates in a row: raise that channel one level;
- rate <= ``fade_threshold`` for ``fade_patience`` updates in a row: lower it one level, so the
  agent does not lean on scaffolding it no longer needs.

The gap between the thresholds is the hysteresis that keeps a channel from flickering.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, NamedTuple

from . import statefile
from .learnability import PassCounts, learnability_weights
from .surface import MAX_LEVEL, SurfacePatch
from .types import StepLabel

FORMAT, FORMAT_VERSION = "seal-evolver", 1
def label_scope(label: StepLabel) -> tuple[str, str] | None:
    """The (channel, scope) a failure label calls for, or None if no channel helps."""
    channel = LABEL_CHANNEL.get(label.label)
    if label.error_kind == "tool_error":  # the call was well formed; the agent must read the error
        channel = "recovery"
    if channel is None:
        return None
    if channel == "recovery":
        kind = label.error_kind or label.label
        return channel, {"unavailable_tool": "unknown_tool"}.get(kind, kind)
    return (channel, label.tool) if label.tool else None


@dataclass(frozen=True)
class EpisodeDiagnosis:
    """What the evolver needs of one finished episode."""

    task_id: str
    domain: str
    difficulty: int
    passed: bool
    labels: tuple[StepLabel, ...]
    surface_canonical: bool = True  # no hint shown: the learnability curriculum compares the two

    @staticmethod
    def from_info(info: Mapping[str, Any]) -> "EpisodeDiagnosis":
        """Build from the ``info`` dict of an episode's last step."""
        return EpisodeDiagnosis(info["task_id"], info["domain"], int(info.get("difficulty", 0)),
                                bool(info["verdict"]["passed"]),
                                tuple(StepLabel.from_dict(d) for d in info["step_labels"]),
                                bool(info.get("surface_canonical", True)))


class Count(NamedTuple):
    """The key of one statistic: ``kind`` is ``episodes`` (per domain), ``bucket_n`` and
    ``bucket_pass`` (per domain and difficulty), ``label`` (per turn label), ``fail`` (episodes
    of a domain failing a channel's scope), or ``task_n`` and ``task_pass`` (per task, its domain
    and difficulty, and ``channel`` ``canonical`` or ``hinted``: the surface it was played on).
    State files spell it ``kind|domain|...``, a task id last since it may hold any character."""

    kind: str
    domain: str = ""
    difficulty: int = 0
    channel: str = ""
    scope: str = ""

    def spelled(self) -> str:
        parts = {"episodes": (self.domain,), "bucket_n": (self.domain, self.difficulty),
                 "bucket_pass": (self.domain, self.difficulty), "label": (self.scope,),
                 "fail": (self.domain, self.channel, self.scope),
                 "task_n": (self.domain, self.difficulty, self.channel, self.scope),
                 "task_pass": (self.domain, self.difficulty, self.channel, self.scope)}[self.kind]
        return "|".join(map(str, (self.kind, *parts)))

    @staticmethod
    def parse(text: str) -> "Count":
        kind, _, rest = text.partition("|")
        if kind in TASK_KINDS:
            parts = rest.split("|", 3)
            if len(parts) == 4 and parts[1].lstrip("-").isdigit() and parts[2] in SURFACE_KINDS:
                return Count(kind, parts[0], int(parts[1]), parts[2], parts[3])
            raise ValueError(f"not an evolver statistic: {text!r}")
        kind, *parts = text.split("|")
        if kind == "episodes" and len(parts) == 1:
            return Count(kind, parts[0])
        if kind in ("bucket_n", "bucket_pass") and len(parts) == 2 and parts[1].lstrip("-").isdigit():
            return Count(kind, parts[0], int(parts[1]))
        if kind == "label" and len(parts) == 1:
            return Count(kind, scope=parts[0])
        if kind == "fail" and len(parts) == 3:
            return Count(kind, parts[0], channel=parts[1], scope=parts[2])
        raise ValueError(f"not an evolver statistic: {text!r}")


#: Per-task statistics, and the two surfaces they are kept for.
TASK_KINDS = ("task_n", "task_pass")
SURFACE_KINDS = ("canonical", "hinted")


def count_diagnoses(diagnoses: Iterable[EpisodeDiagnosis]) -> Counter:
    """The evolver's statistics of finished episodes: a pure count, so batches from any number of
    processes merge by addition in any order."""
    counts: Counter = Counter()
    for d in diagnoses:
        counts[Count("episodes", d.domain)] += 1
        counts[Count("bucket_n", d.domain, d.difficulty)] += 1
        counts[Count("bucket_pass", d.domain, d.difficulty)] += int(d.passed)
        surface = SURFACE_KINDS[0] if d.surface_canonical else SURFACE_KINDS[1]
        counts[Count("task_n", d.domain, d.difficulty, surface, d.task_id)] += 1
        counts[Count("task_pass", d.domain, d.difficulty, surface, d.task_id)] += int(d.passed)
        for label in d.labels:
            counts[Count("label", scope=label.label)] += 1
        for channel, scope in sorted({s for s in map(label_scope, d.labels) if s is not None}):
            counts[Count("fail", d.domain, channel=channel, scope=scope)] += 1
    return counts


def _spelled(counts: Mapping[Count, int]) -> dict[str, int]:
    return dict(sorted((k.spelled(), n) for k, n in counts.items()))


def _parsed(counts: Mapping[str, int], source: str, name: str) -> Counter:
    try:
        return Counter({Count.parse(k): n for k, n in counts.items()})
    except ValueError as e:
        raise statefile.StateFileError(f"{source}: field '{name}': {e}") from None


def _setting(default: Any, help: str, minimum: float = 0, maximum: float | None = None,
             choices: tuple[str, ...] | None = None) -> Any:
    """A field of the evolver's configuration: its default, what it does and its bounds (or, for
    a name, its choices)."""
    bounds = {"choices": choices} if choices is not None else {"minimum": minimum, "maximum": maximum}
    return field(default=default, metadata={"help": help, **bounds})


#: How the curriculum weighs tasks: ``bucket``, by its (domain, difficulty) success rate ``p`` as
#: ``floor + 4 p (1 - p)``; ``learnability``, by how much the hints help the task
#: (:mod:`seal_envs.core.learnability`), every other training episode on the canonical surface.
CURRICULUM_MODES = ("bucket", "learnability")


@dataclass
class Evolver:
    # settings: the one place their defaults, help and bounds live (SEALConfig's evolver_* fields,
    # the saved state's schema and the docs read them from here)
    window: int = _setting(4, "batches in the sliding window", minimum=1)
    raise_threshold: float = _setting(0.3, "failure rate at which a surface channel is raised", maximum=1)
    fade_threshold: float = _setting(0.1, "failure rate at which a channel fades (< the raise threshold)")
    patience: int = _setting(1, "updates in a row at or above the raise threshold before raising", minimum=1)
    fade_patience: int = _setting(2, "updates in a row at or below the fade threshold before fading", minimum=1)
    min_episodes: int = _setting(8, "episodes of a domain in the window before its rates count")
    curriculum: bool = _setting(False, "sample tasks by their bucket's success rate (rows then give only the seed, "
                                       "the env picks the task)")
    curriculum_floor: float = _setting(0.1, "curriculum: least sampling weight of a task")
    curriculum_ema: float = _setting(0.5, "curriculum: EMA factor of bucket success rates", maximum=1)
    curriculum_mode: str = _setting("bucket", "curriculum: 'bucket' (success rate p of the task's domain and "
                                              "difficulty, weight floor + 4p(1-p)) or 'learnability' (hinted minus "
                                              "canonical success, half the episodes canonical)",
                                    choices=CURRICULUM_MODES)
    # state: (channel, scope) keys for levels and streaks, (domain, difficulty) for buckets
    pending: Counter = field(default_factory=Counter)
    history: list[Counter] = field(default_factory=list)
    levels: dict[tuple[str, str], int] = field(default_factory=dict)
    raise_streak: dict[tuple[str, str], int] = field(default_factory=dict)
    fade_streak: dict[tuple[str, str], int] = field(default_factory=dict)
    bucket_success: dict[tuple[str, int], float] = field(default_factory=dict)
    task_counts: Counter = field(default_factory=Counter)  # task_n / task_pass of every batch closed
    events: list[dict[str, Any]] = field(default_factory=list)
    updates: int = 0

    def __post_init__(self):
        if not 0 <= self.fade_threshold < self.raise_threshold <= 1:
            raise ValueError(f"need 0 <= fade_threshold < raise_threshold <= 1, got "
                             f"{self.fade_threshold} and {self.raise_threshold}")
        for f in fields(self):  # every setting within its bounds
            low, high = f.metadata.get("minimum"), f.metadata.get("maximum")
            value = getattr(self, f.name)
            if f.metadata.get("choices") is not None and value not in f.metadata["choices"]:
                raise ValueError(f"{f.name} must be one of {f.metadata['choices']}, got {value!r}")
            if low is not None and not isinstance(value, bool) and (
                    value < low or (high is not None and value > high)):
                raise ValueError(f"{f.name} must be in [{low}, {high if high is not None else 'inf'}], got {value}")

    # -- statistics ----------------------------------------------------------------------
    def observe(self, diagnoses: Iterable[EpisodeDiagnosis]) -> None:
        """Add finished episodes to the pending batch (order does not matter)."""
        self.add_counts(count_diagnoses(diagnoses))

    def add_counts(self, counts: Mapping[Count, int]) -> None:
        """Add counted episodes (:func:`count_diagnoses`, from this or another process)."""
        self.pending.update(counts)

    def merge(self, other: "Evolver") -> None:
        """Add another process's pending batch to this one."""
        self.add_counts(other.pending)

    def rates(self) -> dict[tuple[str, str], float]:
        """Failure rate per (channel, scope) over the window: the worst domain's rate."""
        total: Counter = Counter()
        for batch in self.history[-self.window:]:
            total.update(batch)
        out: dict[tuple[str, str], float] = {}
        for key, n in sorted(total.items()):
            if key.kind != "fail":
                continue
            episodes = total[Count("episodes", key.domain)]
            if episodes >= self.min_episodes:
                scope = (key.channel, key.scope)
                out[scope] = max(out.get(scope, 0.0), n / episodes)
        return out

    # -- decisions -----------------------------------------------------------------------
    def update(self) -> list[SurfacePatch]:
        """Close the pending batch and propose patches, sorted so every rank applies them alike."""
        batch = Counter(dict(sorted(self.pending.items())))
        self.history.append(batch)
        self.history = self.history[-self.window:]
        self.pending = Counter()
        self.updates += 1
        self._update_curriculum(batch)
        self.task_counts.update({k: n for k, n in batch.items() if k.kind in TASK_KINDS})
        rates = self.rates()
        scopes = sorted(set(rates) | set(self.levels))
        patches = [p for channel, scope in scopes if (p := self._decide(channel, scope, rates.get((channel, scope), 0.0)))]
        for p in patches:
            self.events.append({"update": self.updates, **p.to_dict()})
        return patches

    def _decide(self, channel: str, scope: str, rate: float) -> SurfacePatch | None:
        key = (channel, scope)
        level = self.levels.get(key, 0)
        self.raise_streak[key] = self.raise_streak.get(key, 0) + 1 if rate >= self.raise_threshold else 0
        self.fade_streak[key] = self.fade_streak.get(key, 0) + 1 if rate <= self.fade_threshold else 0
        if self.raise_streak[key] >= self.patience and level < MAX_LEVEL[channel]:
            self.raise_streak[key] = 0
            self.levels[key] = level + 1
            return SurfacePatch(channel, scope, level + 1, f"failure rate {rate:.2f} >= {self.raise_threshold}")
        if self.fade_streak[key] >= self.fade_patience and level > 0:
            self.fade_streak[key] = 0
            self.levels[key] = level - 1
            if level == 1:
                del self.levels[key]
            return SurfacePatch(channel, scope, level - 1, f"failure rate {rate:.2f} <= {self.fade_threshold}")
        return None

    def _update_curriculum(self, batch: Mapping[Count, int]) -> None:
        for key, n in batch.items():
            if key.kind != "bucket_n" or n == 0:
                continue
            bucket = (key.domain, key.difficulty)
            rate = batch.get(key._replace(kind="bucket_pass"), 0) / n
            old = self.bucket_success.get(bucket)
            self.bucket_success[bucket] = rate if old is None else (
                self.curriculum_ema * old + (1 - self.curriculum_ema) * rate)

    def label_counts(self) -> list[dict[str, int]]:
        """Step labels per closed batch, oldest first (the window only keeps the last few)."""
        return [{k.scope: n for k, n in sorted(b.items()) if k.kind == "label"} for b in self.history]

    def pass_counts(self) -> dict[str, PassCounts]:
        """Episodes played and passed per task id, on the canonical surface and a hinted one."""
        out: dict[str, list[int]] = {}
        for key, n in sorted(self.task_counts.items()):
            slot = 2 * SURFACE_KINDS.index(key.channel) + TASK_KINDS.index(key.kind)
            out.setdefault(key.scope, [0, 0, 0, 0])[slot] += n
        return {task_id: PassCounts(*v) for task_id, v in out.items()}

    def curriculum_weights(self, task_set) -> list[float]:
        """Sampling weight per task index. ``bucket`` mode: ``floor + 4 p (1 - p)`` for the success
        rate ``p`` of the task's (domain, difficulty) bucket, 1 for buckets not seen yet: GRPO
        learns only from groups with mixed outcomes, which are likeliest where ``p`` is near one
        half. ``learnability`` mode: :func:`~seal_envs.core.learnability.learnability_weights`."""
        if self.curriculum_mode == "learnability":
            ids = getattr(task_set, "task_id", None) or (lambda i: task_set[i].task_id)
            slots = [task_set.slot(i) for i in range(len(task_set))]
            tasks = [(ids(i), s.domain, s.difficulty) for i, s in enumerate(slots)]
            return learnability_weights(tasks, self.pass_counts(), self.curriculum_floor)
        weights = []
        for i in range(len(task_set)):
            s = task_set.slot(i)
            p = self.bucket_success.get((s.domain, s.difficulty))
            weights.append(1.0 if p is None else self.curriculum_floor + 4 * p * (1 - p))
        return weights

    # -- persistence ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "config": {k: getattr(self, k) for k in SETTINGS},
            "pending": _spelled(self.pending),
            "history": [_spelled(b) for b in self.history],
            "levels": _joined(self.levels),
            "raise_streak": _joined(self.raise_streak),
            "fade_streak": _joined(self.fade_streak),
            "bucket_success": _joined(self.bucket_success),
            "task_counts": _spelled(self.task_counts),
            "events": self.events,
            "updates": self.updates,
        }

    @staticmethod
    def from_state_dict(d: Mapping[str, Any], source: str = "evolver state") -> "Evolver":
        """Rebuild a saved evolver; anything missing, extra in ``config``, or of the wrong type is
        a :class:`~seal_envs.core.statefile.StateFileError` naming ``source`` and the field."""
        d = statefile.check(d if not isinstance(d, Mapping) else dict(d), STATE_SCHEMA, source, FORMAT, FORMAT_VERSION)
        for key, level in d["levels"].items():
            channel = key.split("|", 1)[0]
            if level > MAX_LEVEL[channel]:
                raise statefile.StateFileError(f"{source}: field 'levels/{key}' is {level}, above the "
                                               f"{channel} maximum of {MAX_LEVEL[channel]}")
        try:
            ev = Evolver(**d["config"])
        except ValueError as e:
            raise statefile.StateFileError(f"{source}: field 'config' is invalid: {e}") from None
        ev.pending = _parsed(d["pending"], source, "pending")
        ev.history = [_parsed(b, source, f"history/{i}") for i, b in enumerate(d["history"])]
        ev.levels, ev.raise_streak, ev.fade_streak = (_split(d[name], source, name) for name in ("levels", "raise_streak", "fade_streak"))
        ev.bucket_success = {(domain, int(difficulty)): rate for (domain, difficulty), rate
                             in _split(d["bucket_success"], source, "bucket_success").items()}
        ev.task_counts = _parsed(d.get("task_counts", {}), source, "task_counts")
        if any(k.kind not in TASK_KINDS for k in ev.task_counts):
            raise statefile.StateFileError(f"{source}: field 'task_counts' holds a statistic that is not per task")
        ev.events, ev.updates = list(d["events"]), int(d["updates"])
        return ev

    def to_json(self) -> str:
        return json.dumps(self.state_dict(), sort_keys=True)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @staticmethod
    def load(path: str | Path) -> "Evolver":
        """Load a saved evolver; a missing, corrupt, foreign or invalid file is an error naming it."""
        return Evolver.from_state_dict(statefile.read_json(path, "evolver state"), f"evolver state file {path}")


#: The evolver's settings, in order: every field made with :func:`_setting`.
SETTINGS: tuple[str, ...] = tuple(f.name for f in fields(Evolver) if "help" in f.metadata)


def setting_schema() -> dict[str, Any]:
    """The JSON schema of a saved configuration, from the fields' types and bounds."""
    props: dict[str, Any] = {}
    for f in fields(Evolver):
        if f.name not in SETTINGS:
            continue
        kind = {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}[str(f.type)]
        prop: dict[str, Any] = {"type": kind}
        if kind == "string":
            prop["enum"] = list(f.metadata["choices"])
        elif kind != "boolean":
            prop["minimum"] = f.metadata["minimum"]
            if f.metadata["maximum"] is not None:
                prop["maximum"] = f.metadata["maximum"]
        props[f.name] = prop
    return {"type": "object", "additionalProperties": False, "required": list(SETTINGS), "properties": props}


STATE_SCHEMA = {
    "type": "object",
    "required": ["config", "pending", "history", "levels", "raise_streak", "fade_streak", "bucket_success",
                 "events", "updates"],
    "properties": {
        "format": {"const": FORMAT}, "format_version": {"const": FORMAT_VERSION},
        "config": setting_schema(),
        "pending": statefile.counts(),
        "history": {"type": "array", "items": statefile.counts()},
        "levels": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1},
                   "propertyNames": {"pattern": "^(" + "|".join(MAX_LEVEL) + r")\|"}},
        "raise_streak": statefile.counts(), "fade_streak": statefile.counts(),
        "bucket_success": {"type": "object", "additionalProperties": {"type": "number", "minimum": 0, "maximum": 1}},
        "task_counts": statefile.counts(),  # optional: files written before the learnability mode lack it
        "events": {"type": "array", "items": {"type": "object"}},
        "updates": {"type": "integer", "minimum": 0},
    },
}

# Which channel a label calls for: the scope is the tool, or the error kind for recovery.
LABEL_CHANNEL = {
    "schema_violation": "affordance",
    "arg_mismatch": "affordance",
    "spurious_call": "affordance",
    "missing_call": "affordance",
    "wrong_order": "affordance",
    "constraint_violation": "constraint",
    "recovery_failure": "recovery",
    "unknown_tool": "recovery",
    "format_error": "recovery",
}


def _joined(table: Mapping[tuple, Any]) -> dict[str, Any]:
    """``{("affordance", "transfer"): 1}`` as a state file spells it: ``{"affordance|transfer": 1}``."""
    return dict(sorted(("|".join(map(str, k)), v) for k, v in table.items()))


def _split(table: Mapping[str, Any], source: str, name: str) -> dict[tuple[str, str], Any]:
    out = {}
    for key, value in table.items():
        first, sep, second = key.partition("|")
        if not sep or "|" in second:
            raise statefile.StateFileError(f"{source}: field '{name}/{key}' is not a 'a|b' key")
        out[(first, second)] = value
    return out
