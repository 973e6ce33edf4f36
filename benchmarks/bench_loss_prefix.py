"""Does a shared-prefix forward pay for a GRPO loss step? Measured on the efficacy study's RL shapes.

    python benchmarks/bench_loss_prefix.py [--groups 8] [--generations 8] [--repeat 3] [--threads 1]

A GRPO batch holds ``groups`` tasks x ``generations`` episodes; the episodes of a group share their
prompt (the system prompt, tools and first user message: ~520 tokens on the bank domain).
TRL's loss forward encodes every row in full: left-padded prompts, right-padded completions.
The shared-prefix forward (as ``shared_prefix_loss`` does for the warm start) encodes each
group's prompt once, expands its keys/values to the group's rows, and runs only the completions
on top; gradients flow back through the expansion. Both compute the per-token log-probabilities
of the completion tokens and backpropagate ``sum(logp * advantage)`` through the model (the
efficacy study's 128x4 tiny Llama). Reported: forward+backward time of each, their ratio, the
largest per-token log-probability difference and the relative gradient difference.

Completions are random tokens of random lengths between ``--min-completion`` and
``--max-completion`` (the study's budget is 4 turns x (64 + 96) = 640); prompts are real rendered
prompts of bank tasks.

``--step`` measures instead a whole ``SEALGRPOTrainer`` step of the efficacy study's RL setting
(8 bank tasks x 8 episodes = 64, at most 4 turns x 64 new tokens, completion budget 640, the 128x4
tiny Llama, ``per_device_train_batch_size`` 64, beta 0, temperature 1.5) with
``shared_prefix_loss`` on and off, side by side: fresh trainers from the same seed and weights,
the variants alternating each round, so both play the same episodes. Each step is split into the
rollout (``seal_play``), TRL's scoring around it, and the rest (loss forward + backward and the
optimizer step).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from datetime import date
from pathlib import Path


def batch(tok, groups: int, generations: int, lo: int, hi: int, seed: int):
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_trl.play.chat import make_renderer

    renderer = make_renderer(tok, [tok.eos_token_id])
    env = gym.make("seal/ToolUse-v0", domains=("bank",))
    rng = random.Random(seed)
    prompts, completions = [], []
    for g in range(groups):
        _, info = env.reset(seed=1000 + g)
        prompts.append(renderer.prompt_ids(info["new_messages"], info["tools"]))
        completions.append([[rng.randrange(10, len(tok)) for _ in range(rng.randint(lo, hi))]
                            for _ in range(generations)])
    return prompts, completions


def plain_logps(model, prompts, completions, pad):
    """TRL's layout: the batch's prompts left-padded, completions right-padded, one forward."""
    import torch

    rows = [(p, c) for p, cs in zip(prompts, completions) for c in cs]
    P, C = max(len(p) for p, _ in rows), max(len(c) for _, c in rows)
    ids = torch.tensor([[pad] * (P - len(p)) + p + c + [pad] * (C - len(c)) for p, c in rows])
    mask = torch.tensor([[0] * (P - len(p)) + [1] * (len(p) + len(c)) + [0] * (C - len(c)) for p, c in rows])
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, P - 1:-1]
    lp = torch.log_softmax(logits.float(), -1).gather(2, ids[:, P:, None]).squeeze(2)
    return [lp[i, :len(c)] for i, (_, c) in enumerate(rows)]


def shared_logps(model, prompts, completions, pad):
    """Per group: the prompt once (batch 1), its keys/values expanded to the group, completions on top."""
    import torch
    from transformers import DynamicCache

    out = []
    for p, cs in zip(prompts, completions):
        n, C = len(cs), max(len(c) for c in cs)
        head = model(input_ids=torch.tensor([p[:-1]]), use_cache=True)
        kv = [(layer.keys.expand(n, -1, -1, -1), layer.values.expand(n, -1, -1, -1)) for layer in head.cache.layers]
        ids = torch.tensor([[p[-1]] + c + [pad] * (C - len(c)) for c in cs])
        mask = torch.tensor([[1] * (len(p) + len(c)) + [0] * (C - len(c)) for c in cs])
        positions = torch.arange(len(p) - 1, len(p) + C).unsqueeze(0).expand(n, -1)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                       cache=DynamicCache(ddp_cache_data=kv)).logits[:, :-1]
        lp = torch.log_softmax(logits.float(), -1).gather(2, ids[:, 1:, None]).squeeze(2)
        out += [lp[i, :len(c)] for i, c in enumerate(cs)]
    return out


def step(model, fn, prompts, completions, pad, advantages):
    model.zero_grad(set_to_none=True)
    t0 = time.perf_counter()
    lps = fn(model, prompts, completions, pad)
    loss = -sum((lp * a).sum() for lp, a in zip(lps, advantages)) / sum(len(lp) for lp in lps)
    loss.backward()
    seconds = time.perf_counter() - t0
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return seconds, [lp.detach() for lp in lps], grads


def trainer_steps(shared: bool, steps: int, out: str, seed: int = 0, warmstart: str | None = None) -> list[dict[str, float]]:
    """``steps`` GRPO steps of the efficacy RL setting; per step: wall and CPU seconds of the step,
    the rollout and the scoring (rollout included), the loss, and the shared-prefix row counts."""
    from seal_trl.training.config import SEALConfig
    from seal_trl.agent.tiny import build_tiny_model, build_tiny_tokenizer
    from seal_trl.training.train import rl_dataset
    from seal_trl.training.trainer import SEALGRPOTrainer
    from transformers import TrainerCallback

    if warmstart:  # a `seal warmstart` folder: the study's real starting point (longer, multi-turn episodes)
        from seal_trl.agent.warmstart import load_warmstart

        model, tok = load_warmstart(Path(warmstart))
    else:
        tok = build_tiny_tokenizer()
        model = build_tiny_model(tok, hidden_size=128, num_layers=4, num_heads=4, seed=seed)
    args = SEALConfig(
        output_dir=out, use_cpu=True, bf16=False, activation_checkpointing=False, report_to="none",
        save_strategy="no", logging_steps=1, disable_tqdm=True, learning_rate=5e-4, lr_scheduler_type="constant",
        max_steps=steps, seed=seed, beta=0.0, per_device_train_batch_size=64, num_generations=8, temperature=1.5,
        max_completion_length=4 * (64 + 96), env_id="seal/ToolUse-v0",
        env_kwargs={"reward_mode": "progress", "domains": ("bank",)}, max_episode_steps=4, max_new_tokens_per_step=64,
        evolver_min_episodes=8, shared_prefix_loss=shared)
    records: list[dict[str, float]] = []
    clock: dict[str, float] = {}

    class Timer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            clock.update(wall=time.perf_counter(), cpu=time.process_time(), play=0.0, score=0.0)

        def on_step_end(self, *a, **k):
            records.append({"wall": time.perf_counter() - clock["wall"], "cpu": time.process_time() - clock["cpu"],
                            "rollout": clock["play"], "scoring": clock["score"]})

    trainer = SEALGRPOTrainer(model=model, args=args, processing_class=tok,
                              train_dataset=rl_dataset("seal/ToolUse-v0", (1, 2), {"domains": ("bank",)}),
                              callbacks=[Timer()])

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                clock[name] += time.perf_counter() - t0
        return wrapper

    trainer.seal_play = timed("play", trainer.seal_play)
    trainer._generate_and_score_completions = timed("score", trainer._generate_and_score_completions)
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    tokens = [h.get("completions/mean_length", 0.0) for h in trainer.state.log_history if "loss" in h]
    for r, loss, length in zip(records, losses, tokens):
        r.update(loss=loss, mean_completion=length)
    records[-1].update({k: float(v) for k, v in trainer.seal_prefix_stats.items()})
    return records


def step_main(a: argparse.Namespace) -> None:
    """Alternate fresh trainers with ``shared_prefix_loss`` on and off; print every step and the medians."""
    import tempfile

    import torch

    torch.set_num_threads(a.threads)
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    for round_ in range(a.repeat):
        order = ("off", "on") if round_ % 2 == 0 else ("on", "off")
        for name in order:
            with tempfile.TemporaryDirectory() as out:
                recs = trainer_steps(name == "on", a.steps, out, warmstart=a.warmstart)
            for i, r in enumerate(recs):
                print(f"round {round_ + 1}/{a.repeat} {name} step {i + 1}: wall {r['wall']:.2f} s, CPU {r['cpu']:.2f} s, "
                      f"rollout {r['rollout']:.2f} s, scoring w/o rollout {r['scoring'] - r['rollout']:.2f} s, "
                      f"loss+backward+optimizer {r['wall'] - r['scoring']:.2f} s; loss {r['loss']:.6f}, mean completion "
                      f"{r['mean_completion']:.0f} tokens", flush=True)
            print(f"  {name} prefix stats: " + ", ".join(f"{k} {v:.0f}" for k, v in recs[-1].items()
                                                        if k not in ("wall", "cpu", "rollout", "scoring", "loss",
                                                                     "mean_completion")), flush=True)
            runs[name] += recs
    med = {name: {k: statistics.median(r[k] if k != "rest" else r["wall"] - r["scoring"] for r in recs)
                  for k in ("wall", "cpu", "rollout", "rest")} for name, recs in runs.items()}
    print(f"GRPO step, efficacy RL setting (8 bank tasks x 8 episodes, <= 4 turns x 64 tokens, tiny Llama 128x4, "
          f"{a.warmstart or 'random weights'}); median of {len(runs['on'])} steps per variant ({a.repeat} rounds x {a.steps}); "
          f"{os.cpu_count()} cores, {torch.get_num_threads()} torch threads, Python {platform.python_version()}, "
          f"torch {torch.__version__}, {date.today().isoformat()}")
    print("| shared_prefix_loss | step wall (s) | step CPU (s) | rollout (s) | loss + backward + optimizer (s) |")
    print("|---|---|---|---|---|")
    for name in ("off", "on"):
        m = med[name]
        print(f"| {name} | {m['wall']:.2f} | {m['cpu']:.2f} | {m['rollout']:.2f} | {m['rest']:.2f} |")
    print(f"speed-up: step wall {med['off']['wall'] / med['on']['wall']:.2f}x, step CPU "
          f"{med['off']['cpu'] / med['on']['cpu']:.2f}x, loss + backward + optimizer "
          f"{med['off']['rest'] / med['on']['rest']:.2f}x")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--min-completion", type=int, default=150)
    p.add_argument("--max-completion", type=int, default=640)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--step", action="store_true", help="time whole SEALGRPOTrainer steps with the option on and off")
    p.add_argument("--steps", type=int, default=2, help="--step: GRPO steps per trainer")
    p.add_argument("--warmstart", default=None, help="--step: a `seal warmstart` folder instead of random weights")
    a = p.parse_args(argv)
    if a.step:
        step_main(a)
        return

    import torch

    from seal_trl.agent.tiny import build_tiny_model, build_tiny_tokenizer

    torch.set_num_threads(a.threads)
    tok = build_tiny_tokenizer()
    model = build_tiny_model(tok, hidden_size=128, num_layers=4, num_heads=4).train()
    prompts, completions = batch(tok, a.groups, a.generations, a.min_completion, a.max_completion, 0)
    rng = random.Random(1)
    advantages = [rng.uniform(-1, 1) for _ in range(a.groups * a.generations)]
    times: dict[str, list[float]] = {"plain": [], "shared": []}
    for _ in range(a.repeat):
        for name, fn in (("plain", plain_logps), ("shared", shared_logps)):
            seconds, lps, grads = step(model, fn, prompts, completions, tok.pad_token_id, advantages)
            times[name].append(seconds)
            if name == "plain":
                ref_lps, ref_grads = lps, grads
    diff = max(float((x - y).abs().max()) for x, y in zip(lps, ref_lps))
    gdiff = max(float((grads[n] - ref_grads[n]).norm() / ref_grads[n].norm().clamp(min=1e-12)) for n in ref_grads)
    tp, ts = statistics.median(times["plain"]), statistics.median(times["shared"])
    lens = [len(x) for x in prompts]
    print(f"GRPO loss forward+backward, {a.groups} groups x {a.generations} episodes, prompts {min(lens)}-{max(lens)} "
          f"tokens, completions {a.min_completion}-{a.max_completion} tokens, tiny Llama 128x4 "
          f"({sum(q.numel() for q in model.parameters()) / 1e6:.2f} M); median of {a.repeat}; {os.cpu_count()} "
          f"cores, {torch.get_num_threads()} torch threads, Python {platform.python_version()}, torch "
          f"{torch.__version__}, {date.today().isoformat()}")
    print(f"plain (TRL layout): {tp:.2f} s; shared prefix: {ts:.2f} s; speed-up {tp / ts:.2f}x; "
          f"max |logp difference| {diff:.2e}; max relative gradient difference {gdiff:.2e}")


if __name__ == "__main__":
    main()
