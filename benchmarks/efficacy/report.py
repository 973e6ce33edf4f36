"""The efficacy table from the result files: mean ± std over seeds, standard errors, label
fractions and surface events per arm. ``python -m benchmarks.efficacy.report --out runs/efficacy``."""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from .arms import ARMS, DESCRIPTIONS
from seal_trl.agent.policy_eval import std_error


def load_results(out: Path) -> dict[str, list[dict[str, Any]]]:
    by_arm: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in sorted(Path(out).glob("arms/*/seed*/result.json")):
        r = json.loads(path.read_text())
        by_arm[r["arm"]].append(r)
    return {arm: sorted(by_arm[arm], key=lambda r: r["seed"]) for arm in ARMS if arm in by_arm}


def _mean_std(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def difference(p_a: float, n_a: int, p_b: float, n_b: int) -> tuple[float, float]:
    """``p_a - p_b`` and its binomial standard error, treating the two success rates as independent
    (``n`` = episodes behind each rate: tasks x seeds). Seeds re-evaluate the same tasks, so this
    measures sampling noise of the episodes, not of the choice of tasks."""
    return p_a - p_b, math.sqrt(std_error(p_a, n_a) ** 2 + std_error(p_b, n_b) ** 2)


def summarize(out: Path) -> dict[str, Any]:
    out = Path(out)
    rows = {}
    for arm, results in load_results(out).items():
        row: dict[str, Any] = {"seeds": [r["seed"] for r in results], "description": DESCRIPTIONS[arm]}
        for split in ("test", "ood"):
            vals = [r["eval"][split]["success"] for r in results]
            n = results[0]["eval"][split]["tasks"]
            mean, std = _mean_std(vals)
            row[split] = {"mean": mean, "std": std, "values": vals, "tasks": n,
                          # binomial SE of one run at the mean, and of the seed mean (pooled episodes)
                          "se_run": std_error(mean, n), "se_mean": std_error(mean, n * len(vals)),
                          "progress": statistics.fmean(r["eval"][split]["progress"] for r in results)}
        row["train_success"] = statistics.fmean(statistics.fmean(r["train"]["success_rate"] or [0.0])
                                                for r in results)
        row["train_reward"] = statistics.fmean(statistics.fmean([x or 0.0 for x in r["train"]["reward"]] or [0.0])
                                               for r in results)
        fr: Counter = Counter()
        for r in results:
            for k, v in r["train"]["label_fraction"].items():
                fr[k] += v / len(results)
        row["train_label_fraction"] = dict(fr.most_common())
        ev: Counter = Counter()
        for r in results:
            for k, v in r["eval"]["test"]["label_fraction"].items():
                ev[k] += v / len(results)
        row["test_label_fraction"] = dict(ev.most_common())
        events = [e for r in results for e in r["train"]["surface_events"]]
        row["surface_events"] = len(events) / len(results)
        row["raised"] = dict(Counter(e["channel"] for e in events if e.get("level", 0) > 0))
        row["faded"] = dict(Counter(e["channel"] for e in events if e.get("level", 0) == 0))
        row["episodes"] = results[0]["train"]["episodes"]
        row["train_seconds"] = statistics.fmean(r["train"]["seconds"] for r in results)
        rows[arm] = row
    warm_path = out / "warmstart" / "eval.json"
    warm = json.loads(warm_path.read_text()) if warm_path.exists() else None
    for row in rows.values():
        for split in ("test", "ood"):
            r = row[split]
            base = rows.get("grpo", {}).get(split)
            n = r["tasks"] * len(r["values"])
            r["vs_grpo"] = (difference(r["mean"], n, base["mean"], base["tasks"] * len(base["values"]))
                            if base else None)
            r["vs_warmstart"] = (difference(r["mean"], n, warm[split]["success"], warm[split]["tasks"])
                                 if warm else None)
    return {"arms": rows, "warmstart": warm}


def _pct(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}"


def markdown(out: Path) -> str:
    s = summarize(out)
    lines = ["| arm | seeds | RL episodes | test success % (mean ± std) | ood success % (mean ± std) "
             "| SE of one run (test / ood) | test progress | train success | surface events / run |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    w = s["warmstart"]
    if w:
        lines.append(f"| warm start (no RL) | - | 0 | {_pct(w['test']['success'])} | {_pct(w['ood']['success'])} "
                     f"| {_pct(w['test']['stderr'])} / {_pct(w['ood']['stderr'])} | {w['test']['progress']:.3f} "
                     f"| - | - |")
    for arm, r in s["arms"].items():
        lines.append(
            f"| {arm}: {r['description']} | {len(r['seeds'])} | {r['episodes']} "
            f"| {_pct(r['test']['mean'])} ± {_pct(r['test']['std'])} | {_pct(r['ood']['mean'])} ± {_pct(r['ood']['std'])} "
            f"| {_pct(r['test']['se_run'])} / {_pct(r['ood']['se_run'])} | {r['test']['progress']:.3f} "
            f"| {_pct(r['train_success'])} | {r['surface_events']:.1f} |")
    lines += ["", "Differences in success (percentage points, seed mean; ± one binomial SE of the difference, "
              "* where it exceeds 2 SE):", "",
              "| arm | test vs warm start | test vs grpo | ood vs warm start | ood vs grpo |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for arm, r in s["arms"].items():
        cells = [_delta(r[split][key]) for split in ("test", "ood") for key in ("vs_warmstart", "vs_grpo")]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lines += ["", "Turn-label shares during RL (mean over steps and seeds) and on test after RL:", "",
              "| arm | RL: top labels | test: top labels | channels raised / faded |", "| --- | --- | --- | --- |"]
    if w:
        lines.append("| warm start | - | " + _labels(w["test"]["label_fraction"]) + " | - |")
    for arm, r in s["arms"].items():
        lines.append(f"| {arm} | {_labels(r['train_label_fraction'])} | {_labels(r['test_label_fraction'])} "
                     f"| {_counts(r['raised'])} / {_counts(r['faded'])} |")
    return "\n".join(lines) + "\n"


def plot(out: Path, path: str | Path | None) -> dict[str, Any]:
    """Greedy success per arm (seed mean, spread, each seed) with the warm start as a line, and the
    sampled training success per RL step; drawn to ``path`` when matplotlib is installed. Returns the data."""
    from seal_envs.report import _figure, _save

    s = summarize(out)
    data: dict[str, Any] = {"arms": list(s["arms"]), "warmstart": None, "splits": {}, "train_curves": {}}
    for split in ("test", "ood"):
        data["splits"][split] = {arm: r[split]["values"] for arm, r in s["arms"].items()}
    if s["warmstart"]:
        data["warmstart"] = {split: s["warmstart"][split]["success"] for split in ("test", "ood")}
    for arm, results in load_results(out).items():
        curves = [r["train"]["success_rate"] for r in results if r["train"]["success_rate"]]
        if curves:
            n = min(len(c) for c in curves)
            data["train_curves"][arm] = [statistics.fmean(c[i] or 0.0 for c in curves) for i in range(n)]
    fig = _figure(rows=1, height=4.0)
    if fig is None:
        return {**data, "path": None}
    fig.set_size_inches(12, 4.0)
    left, right = fig.subplots(1, 2)
    arms = data["arms"]
    for j, (split, offset) in enumerate((("test", -0.2), ("ood", 0.2))):
        values = data["splits"][split]
        means = [100 * statistics.fmean(values[a]) if values[a] else 0.0 for a in arms]
        stds = [100 * statistics.stdev(values[a]) if len(values[a]) > 1 else 0.0 for a in arms]
        xs = [i + offset for i in range(len(arms))]
        left.bar(xs, means, width=0.38, yerr=stds, capsize=3, label=split, color=f"C{j}", alpha=0.8)
        for x, a in zip(xs, arms):
            left.scatter([x] * len(values[a]), [100 * v for v in values[a]], color="k", s=8, zorder=3)
        if data["warmstart"]:
            left.axhline(100 * data["warmstart"][split], color=f"C{j}", linestyle="--", linewidth=1,
                         label=f"warm start ({split})")
    left.set_xticks(range(len(arms)), arms, rotation=20)
    left.set_ylabel("greedy success %")
    left.set_title("Success after RL (bars: seed mean ± std; dots: seeds)")
    left.legend(fontsize="small")
    left.grid(axis="y", alpha=0.3)
    for i, (arm, curve) in enumerate(data["train_curves"].items()):
        right.plot(range(1, len(curve) + 1), curve, marker="o", markersize=3, label=arm, color=f"C{i}")
    right.set_xlabel("RL step")
    right.set_ylabel("sampled success (seed mean)")
    right.set_title("Training success during RL")
    right.grid(alpha=0.3)
    if data["train_curves"]:
        right.legend(fontsize="small")
    return {**data, "path": _save(fig, path)}


def _delta(d: tuple[float, float] | None) -> str:
    if d is None:
        return "-"
    delta, se = d
    return f"{100 * delta:+.1f} ± {100 * se:.1f}" + ("*" if se > 0 and abs(delta) > 2 * se else "")


def _labels(fr: dict[str, float], top: int = 4) -> str:
    items = sorted(fr.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {100 * v:.0f}%" for k, v in items) or "-"


def _counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items())) or "none"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="runs/efficacy")
    p.add_argument("--png", default=None, help="also draw the plot here (default <out>/efficacy.png)")
    args = p.parse_args(argv)
    print(markdown(Path(args.out)))
    drawn = plot(Path(args.out), args.png or Path(args.out) / "efficacy.png")
    if drawn["path"]:
        print(f"plot: {drawn['path']}")


if __name__ == "__main__":
    main()
