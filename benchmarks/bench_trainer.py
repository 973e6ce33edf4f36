"""Trainer overhead: a SEALGRPOTrainer step against a stock GRPOTrainer step on the same rollouts.

    python benchmarks/bench_trainer.py [--rounds 3] [--steps 3] [--warmup 1] [--batch 8] [--threads 1]

Every variant trains the same tiny Llama (``seal_trl.agent.tiny.build_tiny_model``, same seed; 32 wide
and 1 layer by default) on the same dataset rows (``make_dataset``) with the same TRL settings, and
plays its episodes with the same **scripted** generate function (an env-aware policy as in the
tests: by env slot, follow the oracle, make one malformed call first, or give up), so generation
costs next to nothing and the episodes are the same in all variants (``seal-full``'s evolving
surface adds hint text to observations, so its completions are somewhat longer; the table gives
the tokens). What differs is the trainer around them:

- ``stock``: an unmodified ``trl.GRPOTrainer`` with ``seal_trl.make_rollout_func`` (the same
  ``MultiTurnRollout`` and env pool) and ``env_reward``;
- ``seal-plain``: ``SEALGRPOTrainer`` with ``weighting="none"`` and ``evolution=False``;
- ``seal-full``: ``SEALGRPOTrainer`` with ``weighting="step"`` and ``evolution=True``
  (``evolver_min_episodes=1``, so the evolver can patch the surface from the first step on).

Each variant runs ``--warmup + --steps`` optimizer steps per round with a fresh trainer, for
``--rounds`` rounds whose variant order rotates (so load from other jobs on shared cores drifts
over all variants alike); warm-up steps (env pool creation, caches) are dropped and the per-step
median (and min / max) over the rounds is reported with its ratio to ``stock``, in wall time and in
CPU time of the process (``time.process_time``: both torch threads; less sensitive than wall time
to other jobs taking the cores, though not immune). Inside a step the
script times (by wrapping methods; the library is not changed): the rollout (scripted generation,
env steps, tokenization), TRL's ``_generate_and_score_completions`` without the rollout, SEAL's
own additions to it (per-token weights, diagnosis counts, co-evolution update, logging), the loss
forward + backward, the optimizer step and the rest of the step (gradient clipping, scheduler).
Last, to tell a real difference in the loss part from load noise, each variant's loss forward +
backward runs ``--ab-reps`` times on one fixed generation batch, the variants interleaved. Prints
Markdown tables.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections import defaultdict
from datetime import date

VARIANTS = ("stock", "seal-plain", "seal-full")


class Clock:
    """Seconds per named part, accumulated per optimizer step."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.steps: list[dict[str, float]] = []
        self.tokens: list[int] = []  # completion tokens of each step's rollout
        self.t_step = self.cpu_step = self.t_opt = 0.0

    def wrap(self, name: str, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.current[name] += time.perf_counter() - t0

        return timed


class ScriptedPolicy:
    """A generate function that plays by the env it serves: by env slot ``pos % 3``, 0 follows the
    oracle, 1 makes one malformed call first and then follows the oracle, 2 gives up at once.
    Every episode of a variant therefore gets the same actions (the same as ``seal_helpers``'s)."""

    BROKEN = '<tool_call>{"name": broken</tool_call>'
    GIVE_UP = "Sorry, I cannot help with that."

    def __init__(self, tokenizer, envs_fn):
        self.tok, self.envs_fn = tokenizer, envs_fn
        self.positions: dict[int, int] = {}
        self.agents: dict[int, object] = {}

    def action(self, env) -> str:
        from seal_envs.agents import OracleAgent

        base = env.unwrapped
        pos = self.positions.setdefault(id(env), len(self.positions))
        if not base.steps:
            self.agents[id(env)] = OracleAgent()
        if pos % 3 == 2:
            return self.GIVE_UP
        if pos % 3 == 1 and not base.steps:
            return self.BROKEN
        return self.agents[id(env)].act(env, {"user_turn": base.user_turn})

    def __call__(self, prompts, max_new_tokens):
        from seal_trl.play.generate_fn import Generation

        envs = self.envs_fn()
        assert len(envs) == len(prompts)
        return Generation([(self.tok(self.action(env), add_special_tokens=False)["input_ids"]
                            + [self.tok.eos_token_id])[:max_new_tokens] for env in envs])


def build(variant: str, a, tok, dataset, out: str, clock: Clock):
    import trl
    from transformers import TrainerCallback

    from seal_envs import CoEvolution
    from seal_trl.training.config import SEALConfig
    from seal_trl.play.data import env_reward, make_rollout_func
    from seal_trl.agent.tiny import build_tiny_model
    from seal_trl.training.trainer import SEALGRPOTrainer

    common = dict(output_dir=out, use_cpu=True, bf16=False, activation_checkpointing=False, report_to="none",
                  save_strategy="no", logging_steps=1, learning_rate=1e-5, max_steps=a.warmup + a.steps, seed=0,
                  per_device_train_batch_size=a.batch, num_generations=a.generations,
                  max_completion_length=a.max_completion_length, disable_tqdm=True)

    class StepClock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            clock.current = defaultdict(float)
            clock.t_step, clock.cpu_step = time.perf_counter(), time.process_time()

        def on_pre_optimizer_step(self, args, state, control, **kw):
            clock.t_opt = time.perf_counter()

        def on_optimizer_step(self, args, state, control, **kw):
            clock.current["optimizer"] += time.perf_counter() - clock.t_opt

        def on_step_end(self, args, state, control, **kw):
            clock.current["step"] = time.perf_counter() - clock.t_step
            clock.current["cpu"] = time.process_time() - clock.cpu_step
            clock.steps.append(dict(clock.current))

    model = build_tiny_model(tok, hidden_size=a.hidden, num_layers=a.layers, seed=0)
    if variant == "stock":
        # the rollout_func builds its MultiTurnRollout on its first call; the policy reads its envs then
        policy = ScriptedPolicy(tok, lambda: rollout_func.state["rollout"].current_envs)
        rollout_func = make_rollout_func(a.env_id, max_episode_steps=a.max_episode_steps, max_new_tokens=a.max_new_tokens,
                                         generate_fn=policy, tasks=dataset)

        def timed_rollout(prompts, trainer):
            t0 = time.perf_counter()
            out_ = rollout_func(prompts, trainer)
            clock.current["rollout"] += time.perf_counter() - t0
            clock.tokens.append(sum(len(c) for c in out_["completion_ids"]))
            return out_

        class Stock(trl.GRPOTrainer):
            def _generate_and_score_completions(self, inputs):
                return clock.wrap("grpo_gen_score", super()._generate_and_score_completions)(inputs)

        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
            trainer = Stock(model=model, reward_funcs=env_reward, args=trl.GRPOConfig(**common), train_dataset=dataset,
                            processing_class=tok, rollout_func=timed_rollout, callbacks=[StepClock()])
        trainer.training_step = clock.wrap("train_step", trainer.training_step)  # generation, loss, backward
        return trainer

    class GRPOPart(trl.GRPOTrainer):  # sits between SEALGRPOTrainer and GRPOTrainer in the MRO
        def _generate_and_score_completions(self, inputs):
            return clock.wrap("grpo_gen_score", super()._generate_and_score_completions)(inputs)

    class TimedSEAL(SEALGRPOTrainer, GRPOPart):
        def _generate_and_score_completions(self, inputs):
            return clock.wrap("gen_score_total", super()._generate_and_score_completions)(inputs)

        def seal_play(self, prompts):
            out_ = clock.wrap("rollout", super().seal_play)(prompts)
            clock.tokens.append(sum(len(c) for c in out_["completion_ids"]))
            return out_

        def _seal_token_weights(self, results, output):
            return clock.wrap("seal_weights", super()._seal_token_weights)(results, output)

        def _seal_log(self, *args):
            return clock.wrap("seal_log", super()._seal_log)(*args)

    full = variant == "seal-full"
    args = SEALConfig(**common, env_id=a.env_id, max_episode_steps=a.max_episode_steps, max_new_tokens_per_step=a.max_new_tokens,
                      weighting="step" if full else "none", evolution=full, evolver_min_episodes=1)
    trainer = TimedSEAL(model=model, args=args, train_dataset=dataset, processing_class=tok,
                        generate_fn=ScriptedPolicy(tok, lambda: trainer.seal_rollout.current_envs),
                        callbacks=[StepClock()])
    trainer.training_step = clock.wrap("train_step", trainer.training_step)  # generation, loss, backward
    coev = trainer.seal_coevolution
    coev.step = clock.wrap("seal_evolve", coev.step)  # evolver update + surface patches
    coev.apply = clock.wrap("seal_evolve_apply", coev.apply)  # inside the rollout: give envs the surface
    if not getattr(CoEvolution.count, "_bench_timed", False):
        timed = clock_proxy.wrap("seal_diagnosis_counts", CoEvolution.count)
        timed._bench_timed = True
        CoEvolution.count = staticmethod(timed)
    clock_proxy.target = clock
    return trainer


class _ClockProxy:
    """Routes the class-level ``CoEvolution.count`` timer to the current variant's clock."""

    target: Clock | None = None

    def wrap(self, name, fn):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.target is not None:
                    self.target.current[name] += time.perf_counter() - t0

        return timed


clock_proxy = _ClockProxy()


def summarize(steps: list[dict[str, float]], tokens: list[int]) -> dict:
    def med(key: str) -> float:
        return statistics.median(s.get(key, 0.0) for s in steps)

    out = {k: med(k) for k in ("step", "cpu", "rollout", "seal_weights", "seal_log", "seal_evolve", "seal_evolve_apply",
                               "seal_diagnosis_counts")}
    out["min"] = min(s["step"] for s in steps)
    out["max"] = max(s["step"] for s in steps)
    # SEAL's own part: its _generate_and_score_completions around TRL's, plus handing the surface to envs
    # (which runs inside the rollout); 0 for the stock trainer
    out["seal_own"] = statistics.median(s.get("gen_score_total", s["grpo_gen_score"]) - s["grpo_gen_score"]
                                        + s.get("seal_evolve_apply", 0.0) for s in steps)
    out["trl_score"] = statistics.median(s["grpo_gen_score"] - s["rollout"] for s in steps)
    out["loss"] = statistics.median(s["train_step"] - s.get("gen_score_total", s["grpo_gen_score"]) for s in steps)
    out["optimizer"] = med("optimizer")
    out["other"] = statistics.median(s["step"] - s["train_step"] - s["optimizer"] for s in steps)
    out["tokens"] = statistics.median(tokens)
    return out


def loss_ab(a, tok, dataset, tmp: str) -> dict[str, dict[str, float]]:
    """Loss forward + backward of each variant on its own generation batch of the first rows,
    interleaved (variant after variant, ``--ab-reps`` times), so load drifts over all alike."""
    batches = {}
    for variant in a.variants:
        trainer = build(variant, a, tok, dataset, os.path.join(tmp, f"ab-{variant}"), Clock())
        trainer.model.train()
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer's training loop, read by TRL's loss
        rows = [dict(dataset[i // a.generations]) for i in range(a.batch)]  # as TRL's sampler repeats them
        batches[variant] = (trainer, trainer._generate_and_score_completions(rows))
    times: dict[str, dict[str, list[float]]] = {v: {"wall": [], "cpu": []} for v in batches}
    for _ in range(a.ab_reps):
        for variant, (trainer, batch) in batches.items():
            t0, c0 = time.perf_counter(), time.process_time()
            trainer.compute_loss(trainer.model, batch).backward()
            times[variant]["cpu"].append(time.process_time() - c0)
            times[variant]["wall"].append(time.perf_counter() - t0)
            trainer.model.zero_grad()
    return {v: {"wall": statistics.median(t["wall"]), "cpu": statistics.median(t["cpu"]),
                "shape": tuple(batches[v][1]["advantages"].shape), "width": batches[v][1]["completion_ids"].shape[1]}
            for v, t in times.items()}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds of all variants (fresh trainers; the order rotates per round, against load drift)")
    p.add_argument("--steps", type=int, default=3, help="timed optimizer steps per variant and round")
    p.add_argument("--warmup", type=int, default=1, help="first steps of each run, not timed (env pool, caches)")
    p.add_argument("--batch", type=int, default=8, help="per_device_train_batch_size (= episodes per step)")
    p.add_argument("--generations", type=int, default=4, help="num_generations (episodes per task)")
    p.add_argument("--max-episode-steps", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=64, help="per turn")
    p.add_argument("--max-completion-length", type=int, default=512, help="whole episode")
    p.add_argument("--hidden", type=int, default=32,
                   help="tiny Llama width (32: the test suite's small model, so the loss is as cheap as it gets and "
                        "the trainer's own overhead as large a share as it can be; seal_trl.agent.tiny's default is 128)")
    p.add_argument("--layers", type=int, default=1, help="tiny Llama layers (seal_trl.agent.tiny's default is 4)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads (0: torch's default, one per core). 1 by default: on cores shared with other "
                        "jobs one thread was faster and far steadier than two (docs/benchmarks.md)")
    p.add_argument("--ab-reps", type=int, default=10,
                   help="interleaved loss forward + backward repetitions per variant on one batch (0: skip)")
    p.add_argument("--env-id", default="seal/ToolUse-v0")
    p.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    a = p.parse_args(argv)

    import torch
    from transformers import PrinterCallback

    from seal_trl.play.data import make_dataset
    from seal_trl.agent.tiny import build_tiny_tokenizer

    if a.threads:
        torch.set_num_threads(a.threads)
    tok = build_tiny_tokenizer()
    dataset = make_dataset(a.env_id, "train", num_rows=(a.warmup + a.steps) * a.batch // a.generations)
    print(f"{len(a.variants)} variants x {a.rounds} rounds x ({a.warmup} warm-up + {a.steps} timed) steps; batch "
          f"{a.batch} episodes ({a.generations} per task), max {a.max_episode_steps} turns x {a.max_new_tokens} tokens, "
          f"completion <= {a.max_completion_length}; tiny Llama {a.hidden}x{a.layers}; "
          f"{torch.get_num_threads()} torch threads", flush=True)
    steps: dict[str, list[dict[str, float]]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    notes: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(a.rounds):
            k = rnd % len(a.variants)
            for variant in a.variants[k:] + a.variants[:k]:
                clock = Clock()
                trainer = build(variant, a, tok, dataset, os.path.join(tmp, f"{variant}-{rnd}"), clock)
                trainer.remove_callback(PrinterCallback)
                trainer.train()
                steps[variant] += clock.steps[a.warmup:]
                tokens[variant] += clock.tokens[a.warmup:]
                logs = [h for h in trainer.state.log_history if "loss" in h]
                note = f"mean reward {statistics.mean(h['reward'] for h in logs):.2f}"
                if variant != "stock":
                    note += (f", surface version {trainer.seal_coevolution.surface.version}, "
                             f"{trainer.seal_rollout.generate_calls} generate calls")
                notes[variant] = note
                timed = clock.steps[a.warmup:]
                print(f"round {rnd + 1}/{a.rounds} {variant}: steps " + ", ".join(f"{s['step']:.2f}" for s in timed)
                      + " s wall, " + ", ".join(f"{s['cpu']:.2f}" for s in timed)
                      + f" s CPU (warm-up {clock.steps[0]['step']:.2f} s); {note}", flush=True)
                del trainer
        ab = loss_ab(a, tok, dataset, tmp) if a.ab_reps else {}

    results = {v: summarize(steps[v], tokens[v]) for v in a.variants}
    base = results.get("stock")
    n = len(steps[a.variants[0]])
    print(f"\nTrainer step with scripted generation: median of {n} timed steps per variant ({a.rounds} rounds x "
          f"{a.steps}); batch {a.batch} episodes, {a.generations} per task, max {a.max_episode_steps} turns; tiny Llama "
          f"{a.hidden}x{a.layers}; {os.cpu_count()} CPU cores, {torch.get_num_threads()} torch threads, Python "
          f"{platform.python_version()}, torch {torch.__version__}, {date.today().isoformat()}\n")
    print("| variant | step wall (s) | min / max (s) | ratio to stock | step CPU (s) | CPU ratio to stock "
          "| rollout (s) | TRL scoring w/o rollout (s) | SEAL's own (ms) | loss + backward (s) | optimizer (s) "
          "| rest of the step (s) | completion tokens per step |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for variant, r in results.items():
        ratio = f"{r['step'] / base['step']:.2f}" if base else "-"
        cpu_ratio = f"{r['cpu'] / base['cpu']:.2f}" if base else "-"
        own = f"{1e3 * r['seal_own']:.2f}" if variant != "stock" else "-"
        print(f"| {variant} | {r['step']:.3f} | {r['min']:.3f} / {r['max']:.3f} | {ratio} | {r['cpu']:.3f} | "
              f"{cpu_ratio} | {r['rollout']:.3f} | {r['trl_score']:.3f} | {own} | {r['loss']:.3f} | "
              f"{r['optimizer']:.3f} | {r['other']:.3f} | {r['tokens']:.0f} |")
    seal = [(v, r) for v, r in results.items() if v != "stock"]
    if seal:
        print("\nSEAL's own parts per step (medians, ms):\n")
        print("| variant | per-token weights | diagnosis counts | co-evolution update | surface to envs "
              "| logging | SEAL's own, total | share of the step |")
        print("|---|---|---|---|---|---|---|---|")
        for v, r in seal:
            print(f"| {v} | {1e3 * r['seal_weights']:.2f} | {1e3 * r['seal_diagnosis_counts']:.2f} | "
                  f"{1e3 * r['seal_evolve']:.2f} | {1e3 * r['seal_evolve_apply']:.2f} | {1e3 * r['seal_log']:.2f} | "
                  f"{1e3 * r['seal_own']:.2f} | {100 * r['seal_own'] / r['step']:.3f}% |")
    if ab:
        print(f"\nLoss forward + backward only, on one generation batch per variant (the first rows), variants "
              f"interleaved, median of {a.ab_reps}:\n")
        print("| variant | advantages shape | completion width | wall (s) | CPU (s) | CPU ratio to stock |")
        print("|---|---|---|---|---|---|")
        for v, r in ab.items():
            ratio = f"{r['cpu'] / ab['stock']['cpu']:.2f}" if "stock" in ab else "-"
            print(f"| {v} | {list(r['shape'])} | {r['width']} | {r['wall']:.3f} | {r['cpu']:.3f} | {ratio} |")
    print("\n" + "; ".join(f"{v}: {notes[v]}" for v in a.variants))


if __name__ == "__main__":
    main()
