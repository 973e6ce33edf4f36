"""Is the missing skill a supervised one? More SFT of the shipped agent on tasks it has not seen.

    python -m benchmarks.copying --steps 400 --extra-tasks 20000 --out runs/copying

The shipped agent writes ``sms`` for every alert on held-out tasks: its probability of each
channel is a third whatever the request says (``python -m benchmarks.failures --choice
set_alert.channel``), and GRPO aimed at those tasks did not change that (docs/benchmarks.md,
fourth round). Its SFT saw 6,400 tasks about four times each and ended at loss 0.0001: it
memorised them. This continues its SFT (``seal_trl.agent.warmstart``, the shipped recipe's settings, a
second schedule from its weights) on ``--extra-tasks`` generated train-phrasing tasks, most of
them new to it, for ``--steps`` steps, fewer sequences than tasks so that nothing repeats much;
then it measures, for the shipped agent and the result side by side, the channel probabilities
and greedy success on the 200 held-out test tasks (the budgets ``seal train`` evaluates with).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ENV = "seal/ToolUse-Bank-v0"


def measure(model, tokenizer, tasks: int) -> dict:
    from benchmarks.failures import choice_probabilities
    from seal_trl.agent.policy_eval import evaluate_policy

    model.eval()
    rows = choice_probabilities(model, tokenizer, ENV, "test", tasks, "set_alert", "channel")
    result = evaluate_policy(model, tokenizer, "test", tasks, env_id=ENV, max_new_tokens=64, max_steps=12,
                             batch_size=50)
    return {"p_right_channel": sum(r["probabilities"][str(r["right"])] for r in rows) / len(rows),
            "alert_calls": len(rows), "success": result["success"], "stderr": result["stderr"],
            "by_difficulty": result["by_difficulty"]}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--extra-tasks", type=int, default=20000)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--eval-tasks", type=int, default=200)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("runs/copying"))
    args = p.parse_args(argv)
    import torch

    from seal_trl.agent.checkpoint import DEFAULT_CHECKPOINT, DEFAULT_WARMSTART
    from seal_trl.agent.tiny import load_model_and_tokenizer
    from seal_trl.agent.warmstart import load_warmstart, train_warmstart

    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    cfg = replace(DEFAULT_WARMSTART, init_from=str(DEFAULT_CHECKPOINT), max_steps=args.steps,
                  extra_tasks=args.extra_tasks, lr=args.lr, warmup_steps=10)
    meta = train_warmstart(cfg, args.out)
    shipped, tokenizer = load_model_and_tokenizer("default")
    trained, _ = load_warmstart(args.out)
    rows = {"shipped": measure(shipped, tokenizer, args.eval_tasks), "more SFT": measure(trained, tokenizer, args.eval_tasks)}
    result = {"settings": vars(args) | {"out": str(args.out)}, "sft": {k: meta[k] for k in ("steps", "final_loss", "seconds")},
              "minutes": (time.perf_counter() - start) / 60, "rows": rows}
    (args.out / "copying.json").write_text(json.dumps(result, indent=1))
    print(f"{args.steps} SFT steps on {args.extra_tasks} generated tasks from the shipped agent "
          f"(final loss {meta['final_loss']:.4f}, {meta['seconds'] / 60:.1f} min; all {result['minutes']:.1f} min)\n")
    print("| model | p(right channel), mean over held-out alert calls | greedy test success | 2 SE | by difficulty |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, r in rows.items():
        by = ", ".join(f"d{d} {v:.2f}" for d, v in sorted(r["by_difficulty"].items()))
        print(f"| {name} | {r['p_right_channel']:.2f} ({r['alert_calls']} calls) | {r['success']:.3f} | "
              f"{2 * r['stderr']:.3f} | {by} |")


if __name__ == "__main__":
    main(sys.argv[1:])
