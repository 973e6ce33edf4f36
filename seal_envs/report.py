"""Training-run folders and their reports: what a trainer writes, and what ``seal report`` reads.

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

## The report

:func:`write_report` (``seal report RUN_DIR``) writes into ``RUN_DIR/report/``: ``success.png``
(success rate and reward over steps), ``labels.png`` (label distribution over steps, stacked),
``surface.png`` (timeline of every surface level), ``report.md`` (a Markdown summary) and
``series.json`` (the data behind every plot). The plots need matplotlib (the ``plot`` extra);
without it the Markdown and the data are still written. Every ``plot_*`` function returns the
series it drew, so tests check the data rather than pixels.

:func:`write_evolution_report` writes the same kind of record straight from an env or an
evolver: the surface history and the label distribution over the evolver's updates as JSON, and
as a PNG when matplotlib is installed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from seal_envs.core.diagnosis import LABELS
from seal_envs.core.surface import CHANNELS, Surface, SurfacePatch

__all__ = [
    "EVALUATION_FILE", "EVOLVER_FILE", "METRICS_FILE", "SURFACE_FILE", "SURFACE_HISTORY_FILE", "RunWriter", "episode_metrics",
    "label_series", "load_run", "metrics_from_log_history", "plot_labels", "plot_success", "plot_surface_timeline", "success_series",
    "save_evaluation", "summary_markdown", "surface_series", "write_evolution_report", "write_report",
]

METRICS_FILE = "metrics.jsonl"
SURFACE_HISTORY_FILE = "surface_history.json"
EVOLVER_FILE = "evolver.json"
SURFACE_FILE = "surface.json"
EVALUATION_FILE = "evaluation.json"
LABEL_PREFIX = "labels/"


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
        for lb in info["turn_labels"]:
            counts[lb["label"]] = counts.get(lb["label"], 0) + 1
            steps += 1
    passed = [bool(info["verification"]["passed"]) for info in infos]
    out: dict[str, Any] = {
        "episodes": len(infos),
        "success_rate": sum(passed) / len(infos),
        "reward": (sum(rewards) / len(rewards)) if rewards else sum(passed) / len(infos),
        "progress": sum(float(info["verification"]["progress"]) for info in infos) / len(infos),
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
        patches = env.evolve(final_infos)
        writer.log_patches(step, patches, update=env.evolver.updates)
        writer.save_evolver(env.evolver); writer.save_surface(env.surface)
    """

    def __init__(self, run_dir: str | Path, *, resume: bool = False):
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path = self.dir / METRICS_FILE
        self.history_path = self.dir / SURFACE_HISTORY_FILE
        if resume and self.history_path.exists():
            self.history = json.loads(self.history_path.read_text())
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
TRL_KEYS = {"seal/success_rate": "success_rate", "seal/surface_version": "surface_version",
            "seal/progress": "progress", "reward": "reward"}
TRL_LABEL_PREFIX = "seal/label_frac/"


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
        if "step" not in entry or "seal/success_rate" not in entry:
            continue
        record: dict[str, Any] = {"step": entry["step"]}
        for key, value in entry.items():
            if key == "seal/surface_version":  # TRL averages every logged value: 0.0 is version 0
                record["surface_version"] = int(round(float(value)))
            elif key in TRL_KEYS:
                record[TRL_KEYS[key]] = value
            elif key.startswith(TRL_LABEL_PREFIX):
                record[LABEL_PREFIX + key[len(TRL_LABEL_PREFIX):]] = value
            elif key != "step":
                record[key] = value
        out.append(record)
    return out


def _trainer_folder(d: Path) -> Path | None:
    """``d`` itself or its latest ``checkpoint-N`` if either holds a ``trainer_state.json``."""
    if (d / "trainer_state.json").is_file():
        return d
    checkpoints = [c for c in d.glob("checkpoint-*") if (c / "trainer_state.json").is_file()
                   and c.name.split("-")[-1].isdigit()]
    return max(checkpoints, key=lambda c: int(c.name.split("-")[-1])) if checkpoints else None


def _load_trainer_run(d: Path, folder: Path) -> dict[str, Any]:
    state = json.loads((folder / "trainer_state.json").read_text())
    metrics = metrics_from_log_history(state.get("log_history", []))
    evolver = surface = None
    history: list[dict[str, Any]] = []
    seal_state = folder / "seal_state.json"
    if seal_state.is_file():
        co = json.loads(seal_state.read_text()).get("coevolution", {})
        evolver = co.get("evolver")
        surface = json.loads(co["surface"]) if isinstance(co.get("surface"), str) else co.get("surface")
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
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(record, dict) or "step" not in record:
            raise ValueError(f"{path}:{n}: each line must be a JSON object with a 'step'")
        metrics.append(record)
    metrics.sort(key=lambda r: r["step"])

    def optional(name: str) -> Any:
        p = d / name
        if not p.is_file():
            return None
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{p}: not JSON ({e.msg})") from None

    history = optional(SURFACE_HISTORY_FILE) or []
    if not isinstance(history, list):
        raise ValueError(f"{d / SURFACE_HISTORY_FILE}: expected a JSON list of patches")
    return {"dir": str(d), "metrics": metrics, "surface_history": history,
            "evolver": optional(EVOLVER_FILE), "surface": optional(SURFACE_FILE),
            "evaluation": optional(EVALUATION_FILE)}


# -- series (pure) -------------------------------------------------------------------------
def success_series(metrics: Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """``step``, ``success_rate`` and ``reward`` of the records that have a success rate."""
    rows = [m for m in metrics if m.get("success_rate") is not None]
    return {"step": [m["step"] for m in rows], "success_rate": [float(m["success_rate"]) for m in rows],
            "reward": [float(m.get("reward", m["success_rate"])) for m in rows]}


def label_series(metrics: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``step`` and ``labels`` (label -> share per step) for every label that ever appears with a
    non-zero share, in the order of :data:`LABELS`."""
    rows = [m for m in metrics if any(k.startswith(LABEL_PREFIX) for k in m)]
    seen = {k[len(LABEL_PREFIX):] for m in rows for k, v in m.items() if k.startswith(LABEL_PREFIX) and v}
    order = [lb for lb in LABELS if lb in seen] + sorted(seen - set(LABELS))
    return {"step": [m["step"] for m in rows],
            "labels": {lb: [float(m.get(LABEL_PREFIX + lb, 0.0)) for m in rows] for lb in order}}


def _x_key(history: Sequence[Mapping[str, Any]]) -> str:
    return "step" if history and all("step" in h for h in history) else "update"


def surface_series(history: Sequence[Mapping[str, Any]], start: float | None = None,
                   end: float | None = None) -> dict[str, Any]:
    """A step function per ``channel/scope``: ``x`` (where the level changed, plus ``start``
    at level 0 and ``end`` at the last level) and ``level``. ``x_key`` says whether x counts
    training steps or evolver updates."""
    key = _x_key(history)
    xs = [float(h.get(key, i + 1)) for i, h in enumerate(history)]
    start = (min(xs) - 1 if xs else 0.0) if start is None else float(start)
    end = (max(xs) if xs else start) if end is None else float(end)
    scopes: dict[str, dict[str, list]] = {}
    for x, h in zip(xs, history):
        name = f"{h['channel']}/{h['scope']}"
        s = scopes.setdefault(name, {"x": [start], "level": [0]})
        s["x"].append(x)
        s["level"].append(int(h["level"]))
    for s in scopes.values():
        if end > s["x"][-1]:
            s["x"].append(end)
            s["level"].append(s["level"][-1])
    order = sorted(scopes, key=lambda n: (CHANNELS.index(n.split("/", 1)[0]) if n.split("/", 1)[0] in CHANNELS
                                          else len(CHANNELS), n))
    return {"x_key": key, "scopes": {n: scopes[n] for n in order}}


def final_levels(history: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """``channel/scope -> level`` after every patch (level-0 scopes left out)."""
    levels: dict[str, int] = {}
    for h in history:
        levels[f"{h['channel']}/{h['scope']}"] = int(h["level"])
    return {k: v for k, v in sorted(levels.items()) if v > 0}


# -- plots ---------------------------------------------------------------------------------
def _figure(rows: int = 1, height: float = 3.6):
    """A matplotlib Figure (no pyplot, no global backend), or None without matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure(figsize=(8, height * rows), layout="constrained")


def _draw_success(ax, s: Mapping[str, list], evaluation: Mapping[str, Any] | None = None) -> None:
    ax.plot(s["step"], s["success_rate"], marker="o", markersize=3, label="success rate (sampled, training)")
    ax.plot(s["step"], s["reward"], linestyle="--", label="reward")
    if evaluation and s["step"]:
        b, a = evaluation["before"], evaluation["after"]
        ax.errorbar([0, s["step"][-1]], [b["success"], a["success"]], yerr=[2 * b["stderr"], 2 * a["stderr"]],
                    color="black", marker="s", capsize=4, label=f"greedy held-out {b.get('split', 'test')} (2 SE)")
    ax.set_xlabel("step")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Success over training steps")
    ax.grid(alpha=0.3)
    ax.legend(loc="best")


def _draw_labels(ax, s: Mapping[str, Any], xlabel: str = "step") -> None:
    x = s["step"]
    if s["labels"] and len(x) >= 20:
        ax.stackplot(x, *s["labels"].values(), labels=list(s["labels"]), alpha=0.85)
    elif s["labels"] and x:  # few points: stacked bars (an area needs two points to show)
        gaps = [b - a for a, b in zip(x, x[1:]) if b > a]
        width = 0.8 * (min(gaps) if gaps else 1)
        bottom = [0.0] * len(x)
        for name, values in s["labels"].items():
            ax.bar(x, values, width=width, bottom=bottom, label=name, alpha=0.85)
            bottom = [b + v for b, v in zip(bottom, values)]
    if s["labels"] and x:
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of assistant steps")
    ax.set_title("Turn-label distribution over time")


def _draw_surface(ax, s: Mapping[str, Any]) -> None:
    if s["scopes"]:
        for i, (name, d) in enumerate(s["scopes"].items()):
            ax.step(d["x"], [lv + 0.04 * i for lv in d["level"]], where="post", label=name)
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    else:
        ax.text(0.5, 0.5, "no surface changes", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(s["x_key"])
    ax.set_ylabel("level")
    ax.set_yticks(range(0, 4))
    ax.set_title("Surface levels (channel/scope)")


def _save(fig, path: str | Path | None) -> str | None:
    if fig is None or path is None:
        return None
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return str(path)


def plot_success(metrics: Sequence[Mapping[str, Any]], path: str | Path | None,
                 evaluation: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Draw success rate and reward over steps to ``path`` (and the held-out evaluation before and
    after, when given); return the series (and ``path``: None when nothing was drawn, i.e. without
    matplotlib or without a path)."""
    s = success_series(metrics)
    fig = _figure() if path is not None else None
    if fig is not None:
        _draw_success(fig.add_subplot(), s, evaluation)
    return {**s, "path": _save(fig, path)}


def plot_labels(metrics: Sequence[Mapping[str, Any]], path: str | Path | None) -> dict[str, Any]:
    """Draw the label distribution over steps (stacked shares); return the series."""
    s = label_series(metrics)
    fig = _figure() if path is not None else None
    if fig is not None:
        _draw_labels(fig.add_subplot(), s)
    return {**s, "path": _save(fig, path)}


def plot_surface_timeline(history: Sequence[Mapping[str, Any]], path: str | Path | None,
                          start: float | None = None, end: float | None = None) -> dict[str, Any]:
    """Draw every surface level as a step function over steps (or updates); return the series."""
    s = surface_series(history, start, end)
    fig = _figure() if path is not None else None
    if fig is not None:
        _draw_surface(fig.add_subplot(), s)
    return {**s, "path": _save(fig, path)}


# -- the report ----------------------------------------------------------------------------
def _version_text(value: Any) -> str:
    """A surface version as the integer it is (a metrics file may hold TRL's float mean)."""
    try:
        return str(int(round(float(value))))
    except (TypeError, ValueError):
        return "n/a"


def summary_markdown(run: Mapping[str, Any], plots: Mapping[str, str | None] | None = None) -> str:
    metrics, history = run["metrics"], run["surface_history"]
    name = Path(run["dir"]).name or run["dir"]
    lines = [f"# Training run `{name}`", ""]
    if not metrics:
        return "\n".join(lines + ["No steps were logged.", ""])
    steps = [m["step"] for m in metrics]
    lines += [f"{len(metrics)} logged steps ({steps[0]} to {steps[-1]}); "
              f"surface version {_version_text(metrics[-1].get('surface_version'))} at the end; "
              f"{len(history)} surface patches.", ""]
    s = success_series(metrics)
    if s["step"]:
        tail = max(1, len(s["step"]) // 10)
        lines += ["| metric | first | last | best | mean of last 10% |", "| --- | ---: | ---: | ---: | ---: |"]
        for key in ("success_rate", "reward"):
            v = s[key]
            lines.append(f"| {key} | {v[0]:.4f} | {v[-1]:.4f} | {max(v):.4f} | {sum(v[-tail:]) / tail:.4f} |")
        lines.append("")
    lines += _evaluation_markdown(run.get("evaluation"))
    ls = label_series(metrics)
    if ls["labels"]:
        lines += ["## Turn labels (share of assistant steps)", "", "| label | first step | last step | change |",
                  "| --- | ---: | ---: | ---: |"]
        for lb, v in ls["labels"].items():
            lines.append(f"| {lb} | {v[0]:.4f} | {v[-1]:.4f} | {v[-1] - v[0]:+.4f} |")
        lines.append("")
    lines += ["## Surface", ""]
    levels = final_levels(history)
    if run.get("evolver") and isinstance(run["evolver"].get("levels"), dict):
        levels = {k.replace("|", "/"): int(v) for k, v in sorted(run["evolver"]["levels"].items()) if int(v) > 0}
        lines.append(f"Evolver updates: {run['evolver'].get('updates', 'n/a')}.")
        lines.append("")
    if levels:
        lines += ["Final levels:", "", "| channel | scope | level |", "| --- | --- | ---: |"]
        lines += [f"| {k.split('/', 1)[0]} | {k.split('/', 1)[1]} | {v} |" for k, v in levels.items()]
    else:
        lines.append("Final surface: canonical (every level 0).")
    lines.append("")
    if history:
        key = _x_key(history)
        shown = history[:50]
        lines += [f"Patches ({len(history)}{', first 50' if len(history) > 50 else ''}):", "",
                  f"| {key} | channel | scope | level | reason |", "| ---: | --- | --- | ---: | --- |"]
        lines += [f"| {h.get(key, '')} | {h['channel']} | {h['scope']} | {h['level']} | {h.get('reason', '')} |"
                  for h in shown]
        lines.append("")
    if plots:
        drawn = {k: v for k, v in plots.items() if v}
        if drawn:
            lines += ["## Plots", ""] + [f"![{k}]({Path(v).name})" for k, v in drawn.items()] + [""]
        else:
            lines += ["(No plots: install matplotlib, the `plot` extra.)", ""]
    return "\n".join(lines)


def _evaluation_markdown(ev: Mapping[str, Any] | None) -> list[str]:
    if not ev:
        return []
    b, a = ev["before"], ev["after"]
    lines = [f"## Held-out evaluation (greedy, canonical surface, {b.get('tasks', '?')} {b.get('split', 'test')} "
             "tasks)", "", "| | before | after | change |", "| --- | ---: | ---: | ---: |",
             f"| success | {b['success']:.3f} | {a['success']:.3f} | {100 * ev['difference']:+.1f} points "
             f"(2 SE {100 * ev['two_se']:.1f}) |"]
    for d in sorted(set(b.get("by_difficulty", {})) | set(a.get("by_difficulty", {}))):
        vb, va = b.get("by_difficulty", {}).get(d, 0.0), a.get("by_difficulty", {}).get(d, 0.0)
        lines.append(f"| difficulty {d} | {vb:.3f} | {va:.3f} | {100 * (va - vb):+.1f} points |")
    return lines + [""]


def write_report(run_dir: str | Path, out_dir: str | Path | None = None) -> dict[str, Any]:
    """Plots, ``report.md`` and ``series.json`` for a run folder (default out: ``RUN_DIR/report``).
    Returns ``{"out_dir", "markdown" (the text), "files": {...}, "series": {...}}``."""
    run = load_run(run_dir)
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "report"
    out.mkdir(parents=True, exist_ok=True)
    metrics, history = run["metrics"], run["surface_history"]
    start = metrics[0]["step"] if metrics else None
    end = metrics[-1]["step"] if metrics else None
    if _x_key(history) == "update":  # patches only know evolver updates: no shared axis with steps
        updates = (run.get("evolver") or {}).get("updates")
        start, end = (0, updates) if isinstance(updates, int) and updates > 0 else (None, None)
    series = {
        "success": plot_success(metrics, out / "success.png", run.get("evaluation")),
        "labels": plot_labels(metrics, out / "labels.png"),
        "surface": plot_surface_timeline(history, out / "surface.png", start, end),
    }
    plots = {k: v["path"] for k, v in series.items()}
    text = summary_markdown(run, plots)
    (out / "report.md").write_text(text)
    (out / "series.json").write_text(json.dumps(series, indent=1))
    files = {"markdown": str(out / "report.md"), "series": str(out / "series.json"),
             **{k: v for k, v in plots.items() if v}}
    return {"out_dir": str(out), "markdown": text, "files": files, "series": series}


def write_evolution_report(env_or_evolver: Any, surface: Surface | None = None,
                           out_dir: str | Path = ".") -> dict[str, Any]:
    """The evolution record of an env (its evolver and surface) or of an evolver (with the
    surface it drove, if given): ``evolution.json`` with the surface history (every patch with
    the evolver update that made it), the final surface, and the label distribution per evolver
    update; plus ``evolution.png`` (surface timeline over label distribution) when matplotlib is
    installed. Returns ``{"json", "png", "surface_series", "label_series", "record"}``.

    The evolver keeps counts only for its last ``window`` updates, so the label distribution
    here covers those; a trainer that wants the whole run logs :func:`episode_metrics` per step
    (``metrics.jsonl``) and uses :func:`write_report`.
    """
    env = getattr(env_or_evolver, "unwrapped", env_or_evolver)
    evolver = getattr(env, "evolver", env)
    if surface is None:
        surface = getattr(env, "surface", None)
    if not hasattr(evolver, "events") or not hasattr(evolver, "label_counts"):
        raise TypeError(f"expected a ToolUseEnv or an Evolver, got {type(env_or_evolver).__name__}")
    history = [dict(e) for e in evolver.events]
    if not history and surface is not None and surface.history:
        history = [{"update": i + 1, **p.to_dict()} for i, p in enumerate(surface.history)]
    counts = evolver.label_counts()
    first = evolver.updates - len(counts) + 1
    label_rows = []
    for i, c in enumerate(counts):
        total = sum(c.values())
        label_rows.append({"update": first + i, "counts": dict(sorted(c.items())),
                           **{f"{LABEL_PREFIX}{lb}": (n / total if total else 0.0) for lb, n in c.items()}})
    record = {
        "updates": evolver.updates,
        "levels": {k.replace("|", "/"): v for k, v in sorted(evolver.levels.items())},
        "surface": None if surface is None else json.loads(surface.to_json()),
        "surface_history": history,
        "label_distribution": label_rows,
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    json_path = out / "evolution.json"
    json_path.write_text(json.dumps(record, indent=1))
    ls = label_series([{"step": r["update"], **{k: v for k, v in r.items() if k.startswith(LABEL_PREFIX)}}
                       for r in label_rows])
    ss = surface_series(history, start=0, end=max([evolver.updates] + [h.get("update", 0) for h in history]))
    fig = _figure(rows=2, height=3.2)
    png = None
    if fig is not None:
        top, bottom = fig.subplots(2, 1)
        _draw_surface(top, ss)
        _draw_labels(bottom, ls, xlabel="evolver update")
        png = _save(fig, out / "evolution.png")
    return {"json": str(json_path), "png": png, "surface_series": ss, "label_series": ls, "record": record}
