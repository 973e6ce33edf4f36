"""Where GRPO can find a gradient: per task, do sampled episodes of a policy disagree?

    python -m benchmarks.group_signal --model default --split test --samples 8 --temperature 1.0
    python -m benchmarks.group_signal --model runs/seal-train/model --split train --samples 1 --temperature 0

A GRPO group carries a gradient only when its rewards differ, so a task is useful to RL only
when some samples pass and some fail. This plays every task of the first ``--limit`` of a split
``--samples`` times (canonical surface, the evaluation budget of :mod:`seal_trl.agent.checkpoint`) and
prints, per difficulty, the mean success and how many tasks always fail, always pass or are
mixed. With ``--temperature 0 --samples 1`` it is the greedy evaluation by difficulty (which
tasks fail is written to ``--out`` as JSON). About 1 minute per 200 greedy episodes on one
thread; 8 samples of 200 tasks take about 8 minutes.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path


def outcomes(model_id: str, split: str, limit: int, samples: int, temperature: float,
             env_id: str) -> dict[str, tuple[int, list[bool]]]:
    """``{task_id: (difficulty, [passed of each sample])}``."""
    from seal_envs.eval import evaluate
    from seal_trl.agent.agents import HFBatchAgent
    from seal_trl.agent.checkpoint import EVAL_SETTINGS
    from seal_trl.agent.tiny import load_model_and_tokenizer

    model, tokenizer = load_model_and_tokenizer(model_id)
    model.eval()
    agent = HFBatchAgent(model, tokenizer, temperature=temperature, max_new_tokens=EVAL_SETTINGS["max_new_tokens"],
                         device="cpu")
    result = evaluate(env_id, agent, split=split, k=1, n=samples, limit=limit, batch_size=64,
                      env_kwargs={"max_steps": EVAL_SETTINGS["max_steps"]})
    out: dict[str, tuple[int, list[bool]]] = {}
    for e in result.episodes:
        out.setdefault(e["task_id"], (e["difficulty"], []))[1].append(bool(e["passed"]))
    return out


def table(per_task: dict[str, tuple[int, list[bool]]]) -> str:
    rows: dict[int, list[list[bool]]] = defaultdict(list)
    for difficulty, passed in per_task.values():
        rows[difficulty].append(passed)
    lines = ["| difficulty | tasks | mean success | always fail | always pass | mixed (a GRPO gradient) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for d, tasks in sorted(rows.items()):
        rates = [sum(t) / len(t) for t in tasks]
        lines.append(f"| {d} | {len(tasks)} | {sum(rates) / len(rates):.3f} | {sum(r == 0 for r in rates)} | "
                     f"{sum(r == 1 for r in rates)} | {sum(0 < r < 1 for r in rates)} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="default", help="'default', 'tiny' or a HF model id/path (default %(default)s)")
    ap.add_argument("--env", default="seal/ToolUse-Bank-v0", help="environment id (default %(default)s)")
    ap.add_argument("--split", default="test", choices=["train", "test", "ood"], help="split (default %(default)s)")
    ap.add_argument("--limit", type=int, default=200, help="first N tasks of the split (default %(default)s)")
    ap.add_argument("--samples", type=int, default=8, help="episodes per task (default %(default)s)")
    ap.add_argument("--temperature", type=float, default=1.0, help="0 = greedy (default %(default)s)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default %(default)s)")
    ap.add_argument("--out", default=None, help="write per-task outcomes here as JSON (default: none)")
    a = ap.parse_args()
    if a.limit < 1 or a.samples < 1 or a.temperature < 0 or a.threads < 1:
        ap.error("--limit, --samples and --threads must be >= 1 and --temperature >= 0")
    import torch

    torch.set_num_threads(a.threads)
    start = time.perf_counter()
    per_task = outcomes(a.model, a.split, a.limit, a.samples, a.temperature, a.env)
    print(f"{a.model} on {a.env} {a.split} (first {a.limit}), {a.samples} sample(s) per task at temperature "
          f"{a.temperature}, {time.perf_counter() - start:.0f} s:\n")
    print(table(per_task))
    if a.out:
        Path(a.out).write_text(json.dumps({t: {"difficulty": d, "passed": p} for t, (d, p) in per_task.items()}, indent=1))


if __name__ == "__main__":
    main()
