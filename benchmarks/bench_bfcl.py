"""Time our BFCL env against bfcl-eval's own executor and checker on the same ground truth.

    python benchmarks/bench_bfcl.py [--repeat 3] [--categories base miss_func ...]

For every entry, the same ground-truth calls (BFCL's Python strings, as the data has them) go
through, side by side:

- per call: our ``env.step(call)`` (parse, validate, dispatch, render, info) and our bare
  ``BFCLBackend.execute``, against bfcl-eval's ``execute_multi_turn_func_call([call])`` with
  its instances already created (as ours are at ``reset``);
- whole task: our ``BFCLTaskSet.verify`` on the played episode, cold (the ground truth is
  replayed) and warm (the replay is cached per entry), against bfcl-eval's
  ``multi_turn_checker`` on the ground truth as the model's answer (it executes both);
- whole episode: our reset, every ``env.step`` and the verification, against bfcl-eval's way
  (create the instances, execute each step, then ``multi_turn_checker``, which executes the
  model's calls again on instances of its own, as bfcl-eval's evaluation does).

Each measure is the fastest of ``--repeat`` passes. Prints a Markdown table.

``--paired`` times whole episodes entry by entry instead, the two sides alternating (which goes
first alternates too) so that both see the same moments of a shared machine; each entry's time is
the fastest of ``--repeat`` on each side, as ``timeit`` advises (slower runs are other work on the
machine). It also times our episode warm (the reference replay cached, as for the other episodes
of a GRPO group on the same entry) and reports a group of 8: one cold episode and seven warm.

``--instructions`` counts, instead, the instructions of whole episodes both ways under
callgrind (as ``bench_step_instructions.py`` does for the domains): wall time on a shared
2-core machine moves 10-30% between runs, the count repeats to within about 0.5%. Each side runs
in its own fresh Python, warms up on its first five entries, and is counted only inside
``itertools.starmap`` over the episodes. Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date

from seal_envs.bfcl import loader
from seal_envs.bfcl.backend import BFCLBackend
from seal_envs.bfcl.source import _stock_reference, build_task
from seal_envs.registration import make_bfcl_env as make_env


def _bfcl_modules():
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils

    return multi_turn_checker, multi_turn_utils


def _drop_cached(utils, prefix: str) -> None:
    for key in [k for k in vars(utils) if k.startswith(prefix)]:
        delattr(utils, key)


def bfcl_pass(entries, run: int) -> dict[str, list[float]]:
    """Per-call times of bfcl-eval's executor; per-entry times of its checker and of a whole
    episode its way (create the instances, execute each step, then run the checker)."""
    checker, utils = _bfcl_modules()
    out: dict[str, list[float]] = {"bfcl_call": [], "bfcl_check": [], "bfcl_episode": []}
    for k, entry in enumerate(entries):
        gt = loader.ground_truth(loader.category_of(entry["id"]))[entry["id"]]
        model = f"bench{run}x{k}"
        long_context = "long_context" in entry["id"]
        args = dict(initial_config=entry["initial_config"], involved_classes=entry["involved_classes"],
                    model_name=model, test_entry_id=entry["id"], long_context=long_context, is_evaL_run=False)
        t_episode = time.perf_counter()
        utils.execute_multi_turn_func_call([], **args)  # create the instances, as our reset does
        for turn in gt:
            for call in turn:
                t0 = time.perf_counter()
                utils.execute_multi_turn_func_call([call], **args)
                out["bfcl_call"].append(time.perf_counter() - t0)
        decoded = [[[c] for c in turn] for turn in gt]
        t0 = time.perf_counter()
        result = checker.multi_turn_checker(decoded, gt, entry, "multi_turn", model)
        out["bfcl_check"].append(time.perf_counter() - t0)
        out["bfcl_episode"].append(time.perf_counter() - t_episode)
        _drop_cached(utils, model)
        assert result["valid"], (entry["id"], result)
    return out


def our_episode(env, task, gt, step_times: list[float], warm: bool = False) -> None:
    """Reset, every ground-truth call as an action, "Done." to close each turn (the last one
    verifies); the reference replay's cache is cleared after, so every episode pays for it,
    unless ``warm``."""
    env.reset(options={"task": task})
    for turn in gt:
        for call in turn:
            t0 = time.perf_counter()
            env.step(call)
            step_times.append(time.perf_counter() - t0)
        env.step("Done.")
    if not warm:
        _stock_reference.cache_clear()


def our_pass(entries) -> dict[str, list[float]]:
    """Per-call times of env.step and BFCLBackend.execute; per-entry verification, cold and warm."""
    env = make_env(split="all").unwrapped
    out: dict[str, list[float]] = {"step": [], "execute": [], "verify_cold": [], "verify_warm": [], "episode": []}
    for entry in entries:
        task = build_task(entry["id"])
        gt = loader.ground_truth(loader.category_of(entry["id"]))[entry["id"]]
        t_episode = time.perf_counter()
        our_episode(env, task, gt, out["step"])
        out["episode"].append(time.perf_counter() - t_episode)
        t0 = time.perf_counter()
        verdict = env.task_set.verify(task, env.record)
        out["verify_cold"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        env.task_set.verify(task, env.record)
        out["verify_warm"].append(time.perf_counter() - t0)
        backend = BFCLBackend(task.initial_state)
        for turn in task.turns:
            for call in turn.plan:
                t0 = time.perf_counter()
                backend.execute(call)
                out["execute"].append(time.perf_counter() - t0)
        assert verdict.passed or entry["id"] == "multi_turn_miss_func_49", (entry["id"], verdict.failed_checks)
    return out


def counted(side: str, categories: list[str]) -> None:
    """The process callgrind counts: one side's whole episodes, after a warm-up of five."""
    entries = [e for c in categories for e in loader.entries(c)]
    if side == "ours":
        env, times = make_env(split="all").unwrapped, []
        work = [(build_task(e["id"]), loader.ground_truth(loader.category_of(e["id"]))[e["id"]]) for e in entries]

        def episode(task, gt) -> None:
            our_episode(env, task, gt, times)
    else:
        def episode(entry, run) -> None:
            bfcl_pass([entry], run)

        work = [(e, k) for k, e in enumerate(entries)]
    for item in work[:5]:
        episode(*item)
    print(len(list(itertools.starmap(episode, work))))


def instructions(categories: list[str]) -> None:
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    counts = {}
    for side in ("ours", "bfcl-eval"):
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--collect-atstart=no",
                              "--toggle-collect=starmap_next", sys.executable, __file__, "--counted", side, *categories],
                             capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0"))
        found = re.search(r"Collected : (\d+)", out.stderr)
        if out.returncode != 0 or found is None:
            raise RuntimeError(f"callgrind ({side}) failed:\n{out.stderr[-2000:]}")
        counts[side] = (int(found.group(1)), int(out.stdout.strip().splitlines()[-1]))
    (ours, n), (theirs, _) = counts["ours"], counts["bfcl-eval"]
    print(f"BFCL v4 multi-turn ({', '.join(categories)}), {n} entries; instructions counted by callgrind; "
          f"Python {platform.python_version()}, {date.today().isoformat()}\n")
    print("| whole episode | ours: instructions per entry | bfcl-eval: instructions per entry | ratio ours/bfcl |")
    print("|---|---|---|---|")
    print(f"| reset, every step, verify vs create, execute each step, multi_turn_checker | "
          f"{ours / n / 1e6:.2f}M | {theirs / n / 1e6:.2f}M | {ours / theirs:.2f} |")


def bfcl_episode(entry, run: int) -> float:
    """One whole episode bfcl-eval's way, timed (``bfcl_pass`` on one entry)."""
    return bfcl_pass([entry], run)["bfcl_episode"][0]


def paired(categories: list[str], repeat: int, limit: int | None = None) -> dict[str, list[float]]:
    """Whole episodes, entry by entry and side by side; the fastest of ``repeat`` per entry and
    side (``limit``: the first entries of each category only). Prints the table, returns the times."""
    entries = [e for c in categories for e in loader.entries(c)[:limit]]
    env, times = make_env(split="all").unwrapped, []
    work = [(build_task(e["id"]), loader.ground_truth(loader.category_of(e["id"]))[e["id"]]) for e in entries]

    def ours(k: int, warm: bool) -> float:
        t0 = time.perf_counter()
        our_episode(env, *work[k], times, warm=warm)
        return time.perf_counter() - t0

    for k in range(min(5, len(entries))):  # warm-up: imports, caches of the process
        ours(k, False)
        bfcl_episode(entries[k], -1 - k)
    cold, warm, theirs = ([float("inf")] * len(entries) for _ in range(3))
    for run in range(repeat):
        for k, entry in enumerate(entries):
            sides = ("ours", "bfcl") if (k + run) % 2 else ("bfcl", "ours")
            for side in sides:
                if side == "ours":
                    cold[k] = min(cold[k], ours(k, False))
                    ours(k, True)  # fills the replay's cache for the warm episode
                    warm[k] = min(warm[k], ours(k, True))
                    _stock_reference.cache_clear()
                else:
                    theirs[k] = min(theirs[k], bfcl_episode(entry, run * len(entries) + k))
    t = sum(theirs)
    group = sum(cold) + 7 * sum(warm)
    print(f"BFCL v4 multi-turn, {len(entries)} entries, whole episodes paired entry by entry; fastest of {repeat} "
          f"per entry and side; {os.cpu_count()} CPU cores, Python {platform.python_version()}, {date.today().isoformat()}\n")
    print("| whole episode | ours, total | bfcl-eval, total | ratio ours/bfcl | entries where ours is faster |")
    print("|---|---|---|---|---|")
    for label, values, per in (("cold: the reference replayed afresh", cold, 1), ("warm: the replay cached", warm, 1),
                               ("a GRPO group of 8 on each entry: one cold, seven warm", None, 8)):
        total = group if values is None else sum(values)
        faster = "" if values is None else f"{sum(o < b for o, b in zip(values, theirs))} of {len(entries)}"
        print(f"| {label} | {_fmt(total)} | {_fmt(per * t)} | {total / (per * t):.3f} | {faster} |")
    print("\n| category | entries | cold ratio ours/bfcl | warm ratio ours/bfcl |\n|---|---|---|---|")
    for category in categories:
        ks = [k for k, e in enumerate(entries) if loader.category_of(e["id"]) == category]
        if ks:
            bfcl = sum(theirs[k] for k in ks)
            print(f"| {category} | {len(ks)} | {sum(cold[k] for k in ks) / bfcl:.3f} | {sum(warm[k] for k in ks) / bfcl:.3f} |")
    return {"cold": cold, "warm": warm, "bfcl": theirs}


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} us" if seconds < 1e-2 else f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--categories", nargs="*", default=list(loader.CATEGORIES))
    p.add_argument("--instructions", action="store_true", help="count whole episodes' instructions under callgrind")
    p.add_argument("--paired", action="store_true", help="whole episodes only, the sides alternating entry by entry")
    a = p.parse_args(argv)
    if a.instructions:
        return instructions(a.categories)
    if a.paired:
        paired(a.categories, a.repeat)
        return
    entries = [e for c in a.categories for e in loader.entries(c)]
    best: dict[str, list[float]] = {}
    for run in range(a.repeat):
        for name, values in {**bfcl_pass(entries, run), **our_pass(entries)}.items():
            if name not in best or sum(values) < sum(best[name]):
                best[name] = values
    n_calls = len(best["bfcl_call"])

    def row(label: str, ours: str, theirs: str, unit: str) -> str:
        o, t = best[ours], best[theirs]
        return (f"| {label} | {unit} | {_fmt(statistics.median(o))} / {_fmt(sum(o))} | "
                f"{_fmt(statistics.median(t))} / {_fmt(sum(t))} | {sum(o) / sum(t):.2f} |")

    print(f"BFCL v4 multi-turn, {len(entries)} entries, {n_calls} ground-truth calls; best of {a.repeat}; "
          f"{os.cpu_count()} CPU cores, Python {platform.python_version()}, {date.today().isoformat()}\n")
    print("| measure | per | ours: median / total | bfcl-eval: median / total | ratio ours/bfcl |")
    print("|---|---|---|---|---|")
    print(row("env.step(call) vs execute_multi_turn_func_call([call])", "step", "bfcl_call", "call"))
    print(row("BFCLBackend.execute vs execute_multi_turn_func_call([call])", "execute", "bfcl_call", "call"))
    print(row("verify, cold (replays the ground truth) vs multi_turn_checker", "verify_cold", "bfcl_check", "entry"))
    print(row("verify, warm (cached replay) vs multi_turn_checker", "verify_warm", "bfcl_check", "entry"))
    print(row("whole episode: reset, every step, verify vs create, execute each step, multi_turn_checker",
              "episode", "bfcl_episode", "entry"))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--counted"]:
        counted(sys.argv[2], sys.argv[3:])
    else:
        main()
