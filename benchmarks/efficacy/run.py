"""Efficacy study, one command: shared warm start, six arms x seeds of GRPO, greedy test/ood eval.

    python -m benchmarks.efficacy.run --quick              # ~10 min on 2 CPU cores (a pipeline check)
    nohup python -m benchmarks.efficacy.run > runs/efficacy.log 2>&1 &   # full study (< 2 h)

Resumable: the warm start is cached in ``<out>/warmstart``, its evaluation in
``<out>/warmstart/eval.json`` and each arm+seed writes ``<out>/arms/<arm>/seed<k>/result.json``
when done; a rerun skips everything that exists. The table goes to ``<out>/table.md``, the plot to ``<out>/efficacy.png``.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

from .arms import ARMS
from .settings import FULL, QUICK, StudySettings


def _log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", flush=True)


def run_study(settings: StudySettings, out: Path, arms: Sequence[str] | None = None,
              seeds: Sequence[int] | None = None, log: Callable[[str], None] = _log,
              threads: int = 2, warmstart_only: bool = False) -> str:
    import torch

    from seal_trl.agent.policy_eval import evaluate_policy
    from .report import markdown, plot
    from .rl import result_path, rl_dataset, train_arm
    from seal_trl.agent.warmstart import load_warmstart, train_warmstart

    torch.set_num_threads(max(1, threads))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    arms = list(arms or ARMS)
    seeds = list(settings.seeds if seeds is None else seeds)
    (out / "settings.json").write_text(json.dumps(
        {"name": settings.name, "warmstart": settings.warmstart.key(), "rl": settings.rl.to_dict(),
         "eval": asdict(settings.eval), "arms": {a: ARMS[a] for a in arms}, "seeds": seeds}, indent=1))
    warm_dir = out / "warmstart"
    log(f"== warm start ({settings.name})")
    train_warmstart(settings.warmstart, warm_dir, log=log)
    ev = settings.eval
    warm_eval = warm_dir / "eval.json"
    if warm_eval.exists() and json.loads(warm_eval.read_text()).get("eval_settings") == asdict(ev):
        log("== warm-start evaluation: cached")
    else:
        log("== warm-start evaluation (greedy, canonical surface)")
        model, tokenizer = load_warmstart(warm_dir)
        model.eval()
        with torch.no_grad():
            res = {split: evaluate_policy(model, tokenizer, split, limit, max_new_tokens=ev.max_new_tokens,
                                          max_steps=ev.max_steps, batch_size=ev.batch_size, log=log,
                                          domains=settings.warmstart.domains)
                   for split, limit in (("test", ev.test_tasks), ("ood", ev.ood_tasks))}
        res["eval_settings"] = asdict(ev)
        warm_eval.write_text(json.dumps(res, indent=1))
    w = json.loads(warm_eval.read_text())
    log(f"   warm start: test {w['test']['success']:.3f} (progress {w['test']['progress']:.3f}), "
        f"ood {w['ood']['success']:.3f} (progress {w['ood']['progress']:.3f})")
    if warmstart_only:
        return ""
    dataset = None
    todo = [(a, s) for a in arms for s in seeds]
    for i, (arm, seed) in enumerate(todo, 1):
        if result_path(out, arm, seed).exists():
            log(f"== [{i}/{len(todo)}] {arm} seed {seed}: done already, skipped")
            continue
        if dataset is None:
            dataset = rl_dataset(settings.rl.difficulties, settings.warmstart.domains)
        log(f"== [{i}/{len(todo)}] {arm} seed {seed}: {settings.rl.steps} steps x "
            f"{settings.rl.tasks_per_step} tasks x {settings.rl.num_generations} samples")
        r = train_arm(arm, seed, out, warm_dir, settings.rl, ev, log=log, dataset=dataset,
                      domains=settings.warmstart.domains)
        log(f"   {arm} seed {seed}: test {r['eval']['test']['success']:.3f}, ood {r['eval']['ood']['success']:.3f}, "
            f"{r['seconds']:.0f} s")
    table = markdown(out)
    (out / "table.md").write_text(table)
    plot(out, out / "efficacy.png")
    log("== table\n" + table)
    return table


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the small variant (tiny model, few steps, small evals)")
    p.add_argument("--out", default=None, help="run folder (default runs/efficacy or runs/efficacy-quick)")
    p.add_argument("--arms", nargs="+", choices=list(ARMS), default=None)
    p.add_argument("--seeds", nargs="+", type=int, default=None)
    p.add_argument("--steps", type=int, default=None, help="override the RL steps (probes)")
    p.add_argument("--warmstart-minutes", type=float, default=None, help="override the warm start's time budget")
    p.add_argument("--temperature", type=float, default=None, help="override the RL sampling temperature")
    p.add_argument("--lr", type=float, default=None, help="override the RL learning rate")
    p.add_argument("--warmstart-only", action="store_true", help="train and evaluate the warm start, then stop")
    p.add_argument("--threads", type=int, default=2,
                   help="torch threads; two workers with --threads 1 and disjoint --seeds share 2 cores well")
    args = p.parse_args(argv)
    settings = copy.deepcopy(QUICK if args.quick else FULL)
    if args.steps is not None:
        settings.rl.steps = args.steps
    if args.warmstart_minutes is not None:
        settings.warmstart.minutes = args.warmstart_minutes
    if args.temperature is not None:
        settings.rl.temperature = args.temperature
    if args.lr is not None:
        settings.rl.lr = args.lr
    out = Path(args.out or ("runs/efficacy-quick" if args.quick else "runs/efficacy"))
    run_study(settings, out, args.arms, args.seeds, threads=args.threads, warmstart_only=args.warmstart_only)


if __name__ == "__main__":
    main(sys.argv[1:])
