"""The run folder: the one definition of what a training run writes and how it is read back.

Trainers (``seal train``, :class:`SEALGRPOTrainer`, any loop using :class:`RunWriter`) write it;
``seal report`` (:mod:`seal_envs.report`) and the benchmarks read it. File names, the trainer's
metric names and the ``seal_state.json`` layout are defined here and nowhere else.

## The run folder

A trainer (``seal train``, or any loop that uses :class:`RunWriter`) writes:

- ``metrics.jsonl``: one JSON object per training step, with at least ``step`` (int),
  ``success_rate`` (fraction of the step's episodes whose verification passed), ``reward`` (mean
  reward), ``labels/<label>`` (share of the step's assistant steps with that turn label, for
  every label of :data:`~seal_envs.core.diagnosis.LABELS`) and ``surface_version`` (int). Any other
  keys (loss, kl, weights...) are kept and ignored by the plots.
  :func:`episode_metrics` computes the required keys from the episodes' final ``info`` dicts.
- ``surface_history.json``: a JSON list of the surface patches in the order applied, each
  ``{"step", "update", "channel", "scope", "level", "reason"}`` (``step``: the training step at
  which it was applied; ``update``: the evolver's update count). ``[]`` if nothing changed.
- ``evolver.json``: the evolver's state (:meth:`~seal_envs.core.evolver.Evolver.save`), optional.
- ``surface.json``: the final surface (:meth:`~seal_envs.core.surface.Surface.to_json`), optional.
- ``evaluation.json``: greedy success on held-out tasks before and after training
  (:func:`save_evaluation`), optional; the report adds a before/after table and marks both on the
  success plot.

Only ``metrics.jsonl`` is required; the others are read when present. A Hugging Face trainer
output folder (``trainer_state.json`` with ``SEALGRPOTrainer``'s ``seal/...`` metrics, and
``seal_state.json``, in the folder or its latest ``checkpoint-N``) is read as a run folder too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from seal_envs.core import statefile
from seal_envs.core.diagnosis import LABELS
from seal_envs.core.surface import Surface, SurfacePatch

__all__ = [
    "EVALUATION_FILE", "EVOLVER_FILE", "LABEL_PREFIX", "METRICS_FILE", "SEAL_STATE_FILE", "SURFACE_FILE", "SURFACE_HISTORY_FILE",
    "TRAINER_LABEL_PREFIX", "TRAINER_PROGRESS", "TRAINER_STATE_FILE", "TRAINER_SUCCESS", "TRAINER_SURFACE_VERSION",
    "RunWriter", "episode_metrics", "load_run", "metrics_from_log_history", "save_evaluation",
]

METRICS_FILE = "metrics.jsonl"
SURFACE_HISTORY_FILE = "surface_history.json"
EVOLVER_FILE = "evolver.json"
SURFACE_FILE = "surface.json"
EVALUATION_FILE = "evaluation.json"
LABEL_PREFIX = "labels/"

#: ``SEALGRPOTrainer``'s own state, saved beside TRL's ``trainer_state.json`` in the run folder and
#: in every ``checkpoint-N``: ``{"format": 1, "coevolution": {"evolver", "surface"}, "weigher", ...}``.
SEAL_STATE_FILE = "seal_state.json"
TRAINER_STATE_FILE = "trainer_state.json"
#: The names ``SEALGRPOTrainer`` logs into TRL's log history, read back as run-folder keys.
TRAINER_SUCCESS = "seal/success_rate"
TRAINER_PROGRESS = "seal/progress"
TRAINER_SURFACE_VERSION = "seal/surface_version"
TRAINER_LABEL_PREFIX = "seal/label_frac/"


# -- writing a run -------------------------------------------------------------------------
def episode_metrics(infos: Iterable[Mapping[str, Any]], rewards: Sequence[float] | None = None) -> dict[str, Any]:
    """The required ``metrics.jsonl`` keys (except ``step``) from the final ``info`` dicts of a
    step's episodes: ``episodes``, ``success_rate``, ``reward`` (mean of ``rewards``, else the
    success rate), ``progress``, ``surface_version`` (the highest seen) and ``labels/<label>``
    for every label (shares of all assistant steps; zeros included so series align)."""
    infos = list(infos)
    if not infos:
        raise ValueError("episode_metrics needs at least one finished episode")
    counts = dict.fromkeys(LABELS, 0)
    steps = 0
    for info in infos:
        for lb in info["step_labels"]:
            counts[lb["label"]] = counts.get(lb["label"], 0) + 1
            steps += 1
    passed = [bool(info["verdict"]["passed"]) for info in infos]
    out: dict[str, Any] = {
        "episodes": len(infos),
        "success_rate": sum(passed) / len(infos),
        "reward": (sum(rewards) / len(rewards)) if rewards else sum(passed) / len(infos),
        "progress": sum(float(info["verdict"]["progress"]) for info in infos) / len(infos),
        "surface_version": max(int(info.get("surface_version", 0)) for info in infos),
        "assistant_steps": steps,
    }
    out.update({f"{LABEL_PREFIX}{lb}": (n / steps if steps else 0.0) for lb, n in counts.items()})
    return out


class RunWriter:
    """Appends to a run folder in the format :func:`load_run` reads.

        writer = RunWriter("runs/exp1")
        metrics = episode_metrics(final_infos, rewards)
        writer.log(step, metrics | {"loss": loss})
        patches = co.evolve(final_infos); co.apply(env)      # co: a seal_envs.CoEvolution
        writer.log_patches(step, patches, update=co.evolver.updates)
        writer.save_evolver(co.evolver); writer.save_surface(co.surface)
    """

    def __init__(self, run_dir: str | Path, *, resume: bool = False):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.dir / METRICS_FILE
        self.history_path = self.dir / SURFACE_HISTORY_FILE
        if resume and self.history_path.exists():
            self.history = statefile.read_json(self.history_path, "surface history")
        else:
            self.history = []
            self.metrics_path.write_text("")
            self.history_path.write_text("[]")

    def log(self, step: int, metrics: Mapping[str, Any]) -> dict[str, Any]:
        record = {"step": int(step), **{k: v for k, v in metrics.items() if k != "step"}}
        with self.metrics_path.open("a") as f:
            f.write(json.dumps(record, sort_keys=False, default=float) + "\n")
        return record

    def log_patches(self, step: int, patches: Iterable[SurfacePatch | Mapping[str, Any]],
                    update: int | None = None) -> list[dict[str, Any]]:
        new = []
        for p in patches:
            d = p.to_dict() if isinstance(p, SurfacePatch) else dict(p)
            new.append({"step": int(step), **({"update": update} if update is not None else {}), **d})
        if new:
            self.history.extend(new)
            self.history_path.write_text(json.dumps(self.history, indent=1))
        return new

    def save_evolver(self, evolver) -> Path:
        path = self.dir / EVOLVER_FILE
        evolver.save(path)
        return path

    def save_surface(self, surface: Surface) -> Path:
        path = self.dir / SURFACE_FILE
        path.write_text(surface.to_json())
        return path


# -- reading a run -------------------------------------------------------------------------
TRL_KEYS = {TRAINER_SUCCESS: "success_rate", TRAINER_SURFACE_VERSION: "surface_version", TRAINER_PROGRESS: "progress",
            "reward": "reward"}


_EVAL_KEYS = ("split", "tasks", "success", "stderr", "progress", "by_difficulty", "label_fraction", "passed_task_ids")


def save_evaluation(run_dir: str | Path, before: Mapping[str, Any], after: Mapping[str, Any],
                    **extra: Any) -> Path:
    """Write ``evaluation.json``: two greedy evaluations on the same held-out tasks (dicts with at
    least ``success``, ``stderr`` and ``tasks``), their difference and its two standard errors."""
    diff = float(after["success"]) - float(before["success"])
    two_se = 2 * (float(before["stderr"]) ** 2 + float(after["stderr"]) ** 2) ** 0.5
    record = {"before": {k: before[k] for k in _EVAL_KEYS if k in before},
              "after": {k: after[k] for k in _EVAL_KEYS if k in after},
              "difference": diff, "two_se": two_se, **extra}
    path = Path(run_dir) / EVALUATION_FILE
    path.write_text(json.dumps(record, indent=1, default=str))
    return path


def metrics_from_log_history(log_history: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``metrics.jsonl`` records from a Hugging Face ``trainer_state.json`` log history as
    ``SEALGRPOTrainer`` logs it (``seal/success_rate``, ``seal/label_frac/<label>``,
    ``seal/surface_version``, ``reward``); entries without SEAL metrics are skipped."""
    out = []
    for entry in log_history:
        if "step" not in entry or TRAINER_SUCCESS not in entry:
            continue
        record: dict[str, Any] = {"step": entry["step"]}
        for key, value in entry.items():
            if key == TRAINER_SURFACE_VERSION:  # TRL averages every logged value: 0.0 is version 0
                record["surface_version"] = int(round(float(value)))
            elif key in TRL_KEYS:
                record[TRL_KEYS[key]] = value
            elif key.startswith(TRAINER_LABEL_PREFIX):
                record[LABEL_PREFIX + key[len(TRAINER_LABEL_PREFIX):]] = value
            elif key != "step":
                record[key] = value
        out.append(record)
    return out


def _trainer_folder(d: Path) -> Path | None:
    """``d`` itself or its latest ``checkpoint-N`` if either holds a ``trainer_state.json``."""
    if (d / TRAINER_STATE_FILE).is_file():
        return d
    checkpoints = [c for c in d.glob("checkpoint-*") if (c / TRAINER_STATE_FILE).is_file()
                   and c.name.split("-")[-1].isdigit()]
    return max(checkpoints, key=lambda c: int(c.name.split("-")[-1])) if checkpoints else None


def _json_object(path: Path, what: str) -> dict[str, Any]:
    data = statefile.read_json(path, what)
    if not isinstance(data, dict):
        raise statefile.StateFileError(f"{what} file {path}: expected a JSON object, got {type(data).__name__}")
    return data


def _load_trainer_run(d: Path, folder: Path) -> dict[str, Any]:
    state = _json_object(folder / TRAINER_STATE_FILE, "trainer state")
    metrics = metrics_from_log_history(state.get("log_history", []))
    evolver = surface = None
    history: list[dict[str, Any]] = []
    seal_state = folder / SEAL_STATE_FILE
    if seal_state.is_file():
        co = _json_object(seal_state, "SEAL state").get("coevolution") or {}
        if not isinstance(co, dict):
            raise statefile.StateFileError(f"SEAL state file {seal_state}: field 'coevolution' is not a JSON object")
        evolver = co.get("evolver")
        surface = statefile.parse_json(co["surface"], f"{seal_state} surface") if isinstance(co.get("surface"), str) \
            else co.get("surface")
        history = [dict(e) for e in (evolver or {}).get("events", [])]
    return {"dir": str(d), "metrics": metrics, "surface_history": history, "evolver": evolver, "surface": surface}


def load_run(run_dir: str | Path) -> dict[str, Any]:
    """``{"dir", "metrics": [...], "surface_history": [...], "evolver": dict | None,
    "surface": dict | None}``; a bad line is an error that names the file and the line.

    Without ``metrics.jsonl``, a Hugging Face trainer output folder works too: the
    ``trainer_state.json`` of the folder (or of its latest ``checkpoint-N``) gives the metrics
    (:func:`metrics_from_log_history`) and ``seal_state.json`` beside it the evolver, the surface
    and the patches (by evolver update)."""
    d = Path(run_dir)
    path = d / METRICS_FILE
    if not path.is_file():
        folder = _trainer_folder(d) if d.is_dir() else None
        if folder is not None:
            return _load_trainer_run(d, folder)
        raise FileNotFoundError(f"{d} is not a run folder: it has no {METRICS_FILE} (nor a trainer_state.json)")
    metrics = []
    for n, record in statefile.read_json_lines(path, "metrics"):  # the bounds of every file read
        if not isinstance(record, dict) or "step" not in record:
            raise ValueError(f"{path}:{n}: each line must be a JSON object with a 'step'")
        metrics.append(record)
    metrics.sort(key=lambda r: r["step"])

    def optional(name: str) -> Any:
        p = d / name
        if not p.is_file():
            return None
        return statefile.read_json(p, name)

    history = optional(SURFACE_HISTORY_FILE) or []
    if not isinstance(history, list):
        raise ValueError(f"{d / SURFACE_HISTORY_FILE}: expected a JSON list of patches")
    return {"dir": str(d), "metrics": metrics, "surface_history": history,
            "evolver": optional(EVOLVER_FILE), "surface": optional(SURFACE_FILE),
            "evaluation": optional(EVALUATION_FILE)}
