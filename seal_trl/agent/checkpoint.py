"""The shipped default agent: a warm start made by ``seal warmstart``, with its provenance.

Why ship one: a model trained from scratch earns no reward, so GRPO has nothing to reinforce and
nobody can watch an agent get better. ``seal train`` starts from this checkpoint and ``seal eval
--agent hf:default`` names it. It is small (a 1.3M-parameter Llama, ~5 MB of safetensors plus the
tokenizer files), lives inside the package, and is made by one command from fixed seeds:

    seal warmstart --out seal_trl/agent/checkpoints/default

``provenance.json`` beside the weights records the commit, the command, the data, the minutes it
took and its greedy success per split and difficulty; ``check`` is the exact sample a test
replays to confirm the shipped weights still score what the file says.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from .tiny import DEFAULT_CHECKPOINT, DEFAULT_NAME, resolve_model
from .warmstart import WarmStartConfig

__all__ = ["DEFAULT_CHECKPOINT", "DEFAULT_NAME", "DEFAULT_WARMSTART", "EVAL_SETTINGS", "PROVENANCE_FILE",
           "make_default_checkpoint", "resolve_model"]

PROVENANCE_FILE = "provenance.json"
ENV_ID = "seal/ToolUse-v0"

#: The default agent's recipe: one domain (bank, 9 tools), the 400 train tasks plus 6,000 generated
#: train-phrasing tasks (test/ood requests dropped), scheduled by steps so it is reproducible.
DEFAULT_WARMSTART = WarmStartConfig(
    minutes=None, max_steps=2000, hidden_size=128, num_layers=4, num_heads=4, batch_size=16, lr=3e-3,
    warmup_steps=20, difficulties=(1, 2, 3, 4), extra_tasks=6000, domains=("bank",),
)
#: Greedy evaluation of the provenance (the same budgets `seal train` evaluates with).
EVAL_SETTINGS = {"max_new_tokens": 64, "max_steps": 12, "batch_size": 50}  # 12 actions: the longest task needs 11
CHECK_TASKS = 40  # the fixed sample a test replays: the first 40 test tasks (10 per difficulty)


def load_provenance(folder: str | Path = DEFAULT_CHECKPOINT) -> dict[str, Any]:
    from seal_envs.core.statefile import read_json  # the bounds of every file read

    return read_json(Path(folder) / PROVENANCE_FILE, "provenance")


def _commit() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).parent)
        return done.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _parent(folder: str | None) -> dict[str, Any] | None:
    """The provenance of the checkpoint a second schedule started from (what reproduces it)."""
    if not folder:
        return None
    path = Path(folder) / PROVENANCE_FILE
    return load_provenance(folder) if path.exists() else {"folder": str(folder)}


def evaluate_checkpoint(model: Any, tokenizer: Any, splits: dict[str, int], log: Callable[[str], None] = print,
                        domains: tuple[str, ...] | None = ("bank",), bar: Callable | None = None) -> dict[str, Any]:
    """Greedy success per split (first ``n`` tasks each) with the provenance's budgets; ``bar(desc)``
    makes a ``progress(done, total)`` callback per split (:mod:`seal_trl.training.progress`)."""
    from .policy_eval import evaluate_policy

    return {split: evaluate_policy(model, tokenizer, split, n, domains=domains, log=log, **EVAL_SETTINGS,
                                   progress=bar(f"eval {split}") if bar else None)
            for split, n in splits.items()}


def make_default_checkpoint(out: str | Path, cfg: WarmStartConfig = DEFAULT_WARMSTART, *, eval_tasks: int = 200,
                            command: str | None = None, log: Callable[[str], None] = print,
                            bar: Callable | None = None, save_every: int = 0) -> dict[str, Any]:
    """Train the warm start into ``out`` (weights and tokenizer at the top level), evaluate it and
    write ``provenance.json``. Returns the provenance. ``bar(desc, unit)`` (:mod:`seal_trl.training.progress`)
    gives the training and each evaluation a progress bar; ``save_every=N`` keeps a snapshot every
    N steps in ``out/steps/step-NNNNN``."""
    import shutil

    import torch

    from .warmstart import load_warmstart, train_warmstart

    out = Path(out)
    work = out / "_work"
    start = time.perf_counter()
    meta = train_warmstart(cfg, work, log=log, on_step=bar("warm start", "step") if bar else None,
                           save_every=save_every, snapshot_dir=out / "steps")
    model, tokenizer = load_warmstart(work)
    model.eval()
    eval_bar = (lambda desc: bar(desc, "episode")) if bar else None
    with torch.no_grad():
        evals = evaluate_checkpoint(model, tokenizer, {"test": eval_tasks, "ood": eval_tasks}, log=log,
                                    domains=cfg.domains, bar=eval_bar)
        check = evaluate_checkpoint(model, tokenizer, {"test": CHECK_TASKS}, log=log, domains=cfg.domains,
                                    bar=eval_bar)["test"]
    for f in (work / "model").iterdir():
        shutil.copy2(f, out / f.name)
    provenance = {
        "command": command or "seal warmstart --out " + str(out),
        "commit": _commit(),
        "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}, "
                   f"python {sys.version.split()[0]}",
        "minutes": round((time.perf_counter() - start) / 60, 1),
        "train_minutes": round(meta["seconds"] / 60, 1),
        "config": meta["config"],
        "data": {"oracle_trajectories": meta["examples"], "extra_tasks_dropped": meta["extra_dropped"],
                 "tokens": meta["tokens"], "target_tokens": meta["target_tokens"],
                 "source": "OracleAgent episodes of the bank train split and of generated train-phrasing tasks "
                           "(seeds 10000+; tasks whose request equals a test/ood request dropped)"},
        "params": meta["params"], "steps": meta["steps"], "final_loss": meta["final_loss"],
        "eval_settings": {"env_id": ENV_ID, "domains": list(cfg.domains or []), "greedy": True, **EVAL_SETTINGS},
        "eval": {split: {k: r[k] for k in ("tasks", "success", "stderr", "progress", "by_difficulty",
                                           "label_fraction")}
                 for split, r in evals.items()},
        "init": _parent(cfg.init_from),
        "check": {"split": "test", "tasks": CHECK_TASKS, "success": check["success"],
                  "passed_task_ids": check["passed_task_ids"]},
    }
    (out / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1))
    shutil.rmtree(work)
    log(f"[warmstart] default checkpoint -> {out}: test {evals['test']['success']:.3f}, "
        f"ood {evals['ood']['success']:.3f} ({provenance['minutes']} min)")
    return provenance
