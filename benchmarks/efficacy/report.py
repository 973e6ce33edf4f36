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
from .evaluate import std_error


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
    warm = out / "warmstart" / "eval.json"
    return {"arms": rows, "warmstart": json.loads(warm.read_text()) if warm.exists() else None}


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
    lines += ["", "Turn-label shares during RL (mean over steps and seeds) and on test after RL:", "",
              "| arm | RL: top labels | test: top labels | channels raised / faded |", "| --- | --- | --- | --- |"]
    if w:
        lines.append("| warm start | - | " + _labels(w["test"]["label_fraction"]) + " | - |")
    for arm, r in s["arms"].items():
        lines.append(f"| {arm} | {_labels(r['train_label_fraction'])} | {_labels(r['test_label_fraction'])} "
                     f"| {_counts(r['raised'])} / {_counts(r['faded'])} |")
    return "\n".join(lines) + "\n"


def _labels(fr: dict[str, float], top: int = 4) -> str:
    items = sorted(fr.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{k} {100 * v:.0f}%" for k, v in items) or "-"


def _counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(c.items())) or "none"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="runs/efficacy")
    args = p.parse_args(argv)
    print(markdown(Path(args.out)))


if __name__ == "__main__":
    main()
