"""Three ways to generate a multi-turn rollout with the tiny model, side by side in one run.

    python benchmarks/bench_rollout.py [--episodes 32] [--max-episode-steps 4] [--max-new-tokens 32]
                                       [--repeat 1] [--threads 1]

All three use :class:`seal_trl.play.rollout.MultiTurnRollout`, the same model (the offline tiny Llama
of ``seal_trl.agent.tiny``, greedy decoding), the same envs and the same seeds:

- **sequential**: ``run`` with one episode, once per episode, ``model.generate`` on the whole
  conversation each turn (:func:`seal_trl.play.rollout.padded_generate_fn`; one prompt, so no padding);
- **batched**: one ``run`` over all episodes with the same function: one left-padded
  ``generate`` per turn for every episode still running (the HF path before the engine);
- **cached**: one ``run`` with :class:`seal_trl.play.engine.KVCacheEngine` (what a model gets now):
  each episode's KV cache kept across turns, shared prompt prefixes encoded once, new tokens
  prefilled unpadded, one decode batch.

Each mode runs in its own child process, so each reports its own peak RSS (``ru_maxrss``) next to
the RSS it had before the rollout (model, envs and a warm-up loaded). Generate calls are counted by
the rollout and by a wrapper that also times them (the rest of the wall time is env steps,
chat-template rendering and tokenization). With ``--repeat`` > 1 each child plays its mode that
many times and the median is reported. Prints a Markdown table, the episodes whose tokens agree
between modes, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date

MODES = ("sequential", "batched", "cached")


class Timed:
    """Wraps a generator (plain or keyed): counts calls and generated tokens, times the calls."""

    def __init__(self, fn):
        self.fn = fn
        self.keyed = hasattr(fn, "generate_episodes")
        self.reset()

    def reset(self) -> None:
        self.calls, self.tokens, self.seconds = 0, 0, 0.0

    def _timed(self, call, *args):
        t0 = time.perf_counter()
        out = call(*args)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.tokens += sum(len(ids) for ids in out.ids)
        return out

    def __call__(self, prompts, max_new_tokens):
        return self._timed(self.fn, prompts, max_new_tokens)

    def __getattr__(self, name):  # generate_episodes and release, only when the wrapped generator has them
        if name == "generate_episodes" and self.keyed:
            return lambda keys, seqs, n: self._timed(self.fn.generate_episodes, keys, seqs, n)
        if name == "release" and self.keyed:
            return self.fn.release
        raise AttributeError(name)


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def child(a: argparse.Namespace) -> dict:
    import gymnasium as gym
    import torch

    import seal_envs  # noqa: F401  (registers the ids)
    from seal_trl.play.generate_fn import padded_generate_fn
    from seal_trl.play.rollout import MultiTurnRollout, hf_generate_fn
    from seal_trl.agent.tiny import load_model_and_tokenizer

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model, tok = load_model_and_tokenizer("tiny", seed=a.seed)
    model.eval()
    model.generation_config.do_sample = False  # greedy: every mode sees the same policy
    fn = hf_generate_fn(model, tok) if a.child == "cached" else padded_generate_fn(model, tok)
    gen = Timed(fn)
    rollout = MultiTurnRollout(tok, gen, max_episode_steps=a.max_episode_steps, max_new_tokens=a.max_new_tokens)
    assert rollout.keyed == (a.child == "cached")
    envs = [gym.make(a.env_id, max_steps=a.max_episode_steps) for _ in range(a.episodes)]
    seeds = list(range(a.episodes))
    MultiTurnRollout(tok, fn, max_episode_steps=2, max_new_tokens=8).run(envs[:2], seeds[:2])  # warm-up
    before = rss_mib()
    runs = []
    for _ in range(a.repeat):
        gen.reset()
        calls0 = rollout.generate_calls
        t0, c0 = time.perf_counter(), time.process_time()
        if a.child == "sequential":
            results = [r for env, seed in zip(envs, seeds) for r in rollout.run([env], [seed])]
        else:
            results = rollout.run(envs, seeds)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        assert gen.calls == rollout.generate_calls - calls0
        runs.append({"wall": wall, "cpu": cpu, "gen_s": gen.seconds, "calls": gen.calls, "tokens": gen.tokens})
    return {"mode": a.child, "runs": runs, "rss_before_mib": before,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "turns": sum(r.num_steps for r in results), "completions": [r.completion_ids for r in results],
            "prompt_tokens": [len(r.prompt_ids) for r in results],
            "engine": dict(fn.stats) if a.child == "cached" else None,
            "params": sum(p.numel() for p in model.parameters()), "threads": torch.get_num_threads(),
            "torch": torch.__version__}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=32)
    p.add_argument("--max-episode-steps", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=32, help="per turn")
    p.add_argument("--repeat", type=int, default=1, help="runs of each mode; medians reported")
    p.add_argument("--env-id", default="seal/ToolUse-v0")
    p.add_argument("--seed", type=int, default=0, help="model seed; episode seeds are 0..episodes-1")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (0: torch's default, one per core). 1 by default: on cores shared with other "
                        "jobs one thread was faster and far steadier than two (docs/benchmarks.md)")
    p.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of " + ",".join(MODES))
    p.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        with open(a.out, "w") as f:
            json.dump(child(a), f)
        return

    modes = [m for m in a.modes.split(",") if m]
    res: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            out = os.path.join(tmp, f"{mode}.json")
            args = [sys.executable, __file__, "--child", mode, "--out", out, "--episodes", str(a.episodes),
                    "--max-episode-steps", str(a.max_episode_steps), "--max-new-tokens", str(a.max_new_tokens),
                    "--repeat", str(a.repeat), "--env-id", a.env_id, "--seed", str(a.seed), "--threads", str(a.threads)]
            subprocess.run(args, check=True)
            with open(out) as f:
                res[mode] = json.load(f)
            r = res[mode]
            last = r["runs"][-1]
            print(f"{mode}: {last['wall']:.2f} s wall, {last['cpu']:.2f} s CPU, {last['calls']} generate calls, "
                  f"{last['gen_s']:.2f} s in generate, {last['tokens']} tokens generated, {r['turns']} turns, "
                  f"RSS {r['rss_before_mib']:.0f} MiB before, peak {r['peak_rss_mib']:.0f} MiB", flush=True)
    report(a, modes, res)


def report(a: argparse.Namespace, modes: list[str], res: dict[str, dict]) -> None:
    def med(mode: str, key: str) -> float:
        return statistics.median(r[key] for r in res[mode]["runs"])

    any_ = res[modes[0]]
    lens = any_["prompt_tokens"]
    print(f"\nRollout of {a.episodes} episodes of {a.env_id}, max {a.max_episode_steps} turns x {a.max_new_tokens} new tokens, "
          f"tiny Llama ({any_['params'] / 1e6:.2f} M), greedy; prompt tokens median {statistics.median(lens):.0f} "
          f"(min {min(lens)}, max {max(lens)}); median of {a.repeat}; {os.cpu_count()} CPU cores, {any_['threads']} "
          f"torch threads, Python {platform.python_version()}, torch {any_['torch']}, {date.today().isoformat()}\n")
    print("| mode | generate calls | turns | tokens generated | wall (s) | CPU (s) | in generate (s) | other (s) "
          "| episodes/s | RSS before (MiB) | peak RSS (MiB) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for mode in modes:
        r, wall, g = res[mode], med(mode, "wall"), med(mode, "gen_s")
        last = r["runs"][-1]
        print(f"| {mode} | {last['calls']} | {r['turns']} | {last['tokens']} | {wall:.2f} | {med(mode, 'cpu'):.2f} "
              f"| {g:.2f} | {wall - g:.2f} | {a.episodes / wall:.2f} | {r['rss_before_mib']:.0f} "
              f"| {r['peak_rss_mib']:.0f} |")
    print()
    for x, y in [(x, y) for i, x in enumerate(modes) for y in modes[i + 1:]]:
        same = sum(p == q for p, q in zip(res[x]["completions"], res[y]["completions"]))
        print(f"- tokens identical, {x} vs {y}: {same}/{a.episodes} episodes; wall time ratio {x}/{y}: "
              f"{med(x, 'wall') / med(y, 'wall'):.2f}x, generate time ratio {med(x, 'gen_s') / med(y, 'gen_s'):.2f}x, "
              f"CPU ratio {med(x, 'cpu') / med(y, 'cpu'):.2f}x")
    if "cached" in res:
        print(f"- engine: {res['cached']['engine']}")


if __name__ == "__main__":
    main()
