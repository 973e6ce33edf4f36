"""Reports of training runs: plots and a Markdown summary of a run folder
(:mod:`seal_envs.run_folder`).

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
from typing import Any, Mapping, Sequence

from seal_envs.coevolution import CoEvolution
from seal_envs.core.diagnosis import LABELS
from seal_envs.core.evolver import Evolver
from seal_envs.core.surface import CHANNELS, Surface
from seal_envs.run_folder import LABEL_PREFIX, load_run

__all__ = [
    "label_series", "plot_labels", "plot_success", "plot_surface_timeline", "success_series", "summary_markdown",
    "surface_series", "write_evolution_report", "write_report",
]


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


def write_evolution_report(coevolution_or_evolver: CoEvolution | Evolver, surface: Surface | None = None,
                           out_dir: str | Path = ".") -> dict[str, Any]:
    """The evolution record of a :class:`~seal_envs.coevolution.CoEvolution` (its evolver and
    surface) or of an evolver (with the surface it drove, if given): ``evolution.json`` with the surface history (every patch with
    the evolver update that made it), the final surface, and the label distribution per evolver
    update; plus ``evolution.png`` (surface timeline over label distribution) when matplotlib is
    installed. Returns ``{"json", "png", "surface_series", "label_series", "record"}``.

    The evolver keeps counts only for its last ``window`` updates, so the label distribution
    here covers those; a trainer that wants the whole run logs :func:`episode_metrics` per step
    (``metrics.jsonl``) and uses :func:`write_report`.
    """
    if isinstance(coevolution_or_evolver, CoEvolution):
        evolver, surface = coevolution_or_evolver.evolver, surface or coevolution_or_evolver.surface
    elif isinstance(coevolution_or_evolver, Evolver):
        evolver = coevolution_or_evolver
    else:
        raise TypeError(f"expected a CoEvolution or an Evolver, got {type(coevolution_or_evolver).__name__}")
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
        "levels": {"/".join(k): v for k, v in sorted(evolver.levels.items())},
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
