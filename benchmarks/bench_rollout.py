"""Batched multi-turn rollout against one episode at a time, with the tiny model, in one run.

    python benchmarks/bench_rollout.py [--episodes 32] [--max-turns 4] [--max-new-tokens 32]
                                       [--repeat 1] [--threads 1]

Both modes use the same class, :class:`seal_trl.rollout.MultiTurnRollout`, the same model (the
offline tiny Llama of ``seal_trl.tiny``, greedy decoding), the same envs and the same seeds:

- **batched**: one ``run`` over all episodes: one ``generate`` call per turn for every episode
  still running;
- **sequential**: ``run`` with one episode, once per episode (one ``generate`` per turn per
  episode).

Generate calls are counted by the rollout (``generate_calls``) and by a wrapper around the
generate function, which also times them (the rest of the wall time is env steps, chat-template
rendering and tokenization). Wall time and the process's CPU time (``time.process_time``, all
torch threads) are both reported. A warm-up rollout of two episodes runs first. With
``--repeat`` > 1 the modes alternate and the median of each is reported. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from datetime import date

import gymnasium as gym

import seal_envs  # noqa: F401  (registers the ids)


class TimedGenerate:
    """Wraps a GenerateFn: counts calls, prompts, generated tokens and the time spent generating."""

    def __init__(self, fn):
        self.fn = fn
        self.reset()

    def reset(self) -> None:
        self.calls, self.prompts, self.tokens, self.seconds = 0, 0, 0, 0.0

    def __call__(self, prompts, max_new_tokens):
        t0 = time.perf_counter()
        out = self.fn(prompts, max_new_tokens)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.prompts += len(prompts)
        self.tokens += sum(len(ids) for ids in out.ids)
        return out


def play(mode: str, rollout, gen: TimedGenerate, envs, seeds) -> dict:
    gen.reset()
    calls_before = rollout.generate_calls
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "batched":
        results = rollout.run(envs, seeds)
    else:
        results = [r for env, seed in zip(envs, seeds) for r in rollout.run([env], [seed])]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert gen.calls == rollout.generate_calls - calls_before  # the two counts agree
    return {"mode": mode, "wall": wall, "cpu": cpu, "gen_s": gen.seconds,
            "calls": rollout.generate_calls - calls_before, "tokens": gen.tokens,
            "results": results, "turns": sum(r.num_turns for r in results)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=32, help="per turn")
    p.add_argument("--repeat", type=int, default=1, help="alternating runs of each mode; medians reported")
    p.add_argument("--env-id", default="seal/ToolUse-v0")
    p.add_argument("--seed", type=int, default=0, help="model seed; episode seeds are 0..episodes-1")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (0: torch's default, one per core). 1 by default: on cores shared with other "
                        "jobs one thread was faster and far steadier than two (docs/benchmarks.md)")
    a = p.parse_args(argv)

    import torch

    from seal_trl.rollout import MultiTurnRollout, hf_generate_fn
    from seal_trl.tiny import load_model_and_tokenizer

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model, tok = load_model_and_tokenizer("tiny", seed=a.seed)
    model.eval()
    model.generation_config.do_sample = False  # greedy: both modes see the same policy
    params = sum(p.numel() for p in model.parameters())
    gen = TimedGenerate(hf_generate_fn(model, tok))
    rollouts = {m: MultiTurnRollout(tok, gen, max_turns=a.max_turns, max_new_tokens=a.max_new_tokens)
                for m in ("batched", "sequential")}
    envs = [gym.make(a.env_id, max_steps=a.max_turns) for _ in range(a.episodes)]
    seeds = list(range(a.episodes))
    prompt_lens = [len(rollouts["batched"].renderer.prompt_ids(info["messages"], info["tools"]))
                   for info in (env.reset(seed=s)[1] for env, s in zip(envs, seeds))]
    print(f"tiny Llama {params / 1e6:.2f} M params, {torch.get_num_threads()} torch threads; {a.episodes} episodes "
          f"of {a.env_id}, max {a.max_turns} turns x {a.max_new_tokens} new tokens, greedy; prompt tokens "
          f"median {statistics.median(prompt_lens):.0f} (min {min(prompt_lens)}, max {max(prompt_lens)})", flush=True)

    play("batched", MultiTurnRollout(tok, gen, max_turns=2, max_new_tokens=8), gen, envs[:2], seeds[:2])  # warm-up
    runs: dict[str, list[dict]] = {"batched": [], "sequential": []}
    for rep in range(a.repeat):
        for mode in ("batched", "sequential"):
            r = play(mode, rollouts[mode], gen, envs, seeds)
            runs[mode].append(r)
            print(f"[{rep + 1}/{a.repeat}] {mode}: {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU, "
                  f"{r['calls']} generate calls, "
                  f"{r['gen_s']:.2f} s in generate, {r['tokens']} tokens generated, {r['turns']} turns", flush=True)

    b, s = runs["batched"][-1], runs["sequential"][-1]
    same = sum(x.completion_ids == y.completion_ids for x, y in zip(b["results"], s["results"]))
    print(f"episodes whose tokens are identical in both modes: {same}/{a.episodes} "
          "(greedy; left padding can flip a near-tie)", flush=True)

    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[mode])

    print(f"\nRollout of {a.episodes} episodes, max {a.max_turns} turns x {a.max_new_tokens} new tokens, tiny Llama "
          f"({params / 1e6:.2f} M), greedy; median of {a.repeat}; {os.cpu_count()} CPU cores, "
          f"{torch.get_num_threads()} torch threads, Python {platform.python_version()}, torch {torch.__version__}, "
          f"{date.today().isoformat()}\n")
    print("| mode | generate calls | turns played | tokens generated | wall (s) | CPU (s) | in generate (s) "
          "| other (s) | episodes/s | generated tokens/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode in ("batched", "sequential"):
        wall, g = med(mode, "wall"), med(mode, "gen_s")
        last = runs[mode][-1]
        print(f"| {mode} | {last['calls']} | {last['turns']} | {last['tokens']} | {wall:.2f} | "
              f"{med(mode, 'cpu'):.2f} | {g:.2f} | "
              f"{wall - g:.2f} | {a.episodes / wall:.2f} | {last['tokens'] / wall:.0f} |")
    print(f"\nSpeed-up of batched over sequential (wall time ratio sequential/batched): "
          f"{med('sequential', 'wall') / med('batched', 'wall'):.2f}x; CPU time ratio: "
          f"{med('sequential', 'cpu') / med('batched', 'cpu'):.2f}x; generate time ratio: "
          f"{med('sequential', 'gen_s') / med('batched', 'gen_s'):.2f}x; generate calls "
          f"{runs['sequential'][-1]['calls']} vs {runs['batched'][-1]['calls']}.")
    for env in envs:
        env.close()


if __name__ == "__main__":
    main()
