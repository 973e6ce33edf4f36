"""Helpers of the seal_trl tests: small models, a scripted env-aware policy, CPU configs."""

from __future__ import annotations


def small_model(tokenizer, seed: int = 0):
    """A very small Llama: the prompts (system text + tool schemas) are ~1.5k tokens long."""
    from seal_trl.agent.tiny import build_tiny_model

    return build_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=2, seed=seed)


class ScriptedPolicy:
    """A generate function that plays by the env it serves (``rollout.current_envs``).

    Behaviour by the env's position in the pool (``pos % 3``): 0 follows the oracle; 1 makes one
    malformed call first (a ``format_error`` turn) and then follows the oracle; 2 gives up at once
    (a failing episode). So groups of two mix outcomes and episodes have turns with different
    labels. ``calls`` counts generate calls; ``batch_sizes`` records each call's prompt count.
    """

    BROKEN = '<tool_call>{"name": broken</tool_call>'
    GIVE_UP = "Sorry, I cannot help with that."

    def __init__(self, tokenizer, rollout=None):
        self.tok = tokenizer
        self.rollout = rollout
        self.positions: dict[int, int] = {}
        self.agents: dict[int, OracleAgent] = {}
        self.calls = 0
        self.batch_sizes: list[int] = []

    def action(self, env) -> str:
        from seal_envs.agents import OracleAgent

        base = env.unwrapped
        pos = self.positions.setdefault(id(env), len(self.positions))
        if not base.steps:
            self.agents[id(env)] = OracleAgent()
        behaviour = pos % 3
        if behaviour == 2:
            return self.GIVE_UP
        if behaviour == 1 and not base.steps:
            return self.BROKEN
        return self.agents[id(env)].act(env, {"user_turn": base.user_turn})

    def __call__(self, prompts, max_new_tokens):
        from seal_trl.play.generate_fn import Generation

        self.calls += 1
        self.batch_sizes.append(len(prompts))
        envs = self.rollout.current_envs
        assert len(envs) == len(prompts)
        out = []
        for env in envs:
            ids = self.tok(self.action(env), add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
            out.append(ids[:max_new_tokens])
        return Generation(out)


def cpu_args(tmp_path, **overrides):
    """A SEALConfig for CPU tests: tiny batches, two steps, no saving unless asked."""
    from seal_trl.training.config import SEALConfig

    base = dict(
        output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, activation_checkpointing=False,
        report_to="none", save_strategy="no", logging_steps=1, learning_rate=1e-2, max_steps=2, seed=0,
        per_device_train_batch_size=4, num_generations=2, max_completion_length=384,
        max_episode_steps=5, max_new_tokens_per_step=64, evolver_min_episodes=1, disable_tqdm=True,
    )
    base.update(overrides)
    return SEALConfig(**base)


class RankPolicy(ScriptedPolicy):
    """Rank 1 plays other behaviours than rank 0, so local diagnoses differ and only gathering agrees."""

    def __init__(self, tokenizer, rank):
        super().__init__(tokenizer)
        self.rank = rank

    def action(self, env):
        self.positions.setdefault(id(env), len(self.positions) + 2 * self.rank)
        return super().action(env)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now: the main process port of a multi-process test."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(cmd, env, attempts: int = 2):
    """Run an ``accelerate launch`` command, relaunching once: on 2 loaded cores a rank rarely
    aborts (SIGABRT) at launch. Fails with every attempt's output."""
    import subprocess

    failures = []
    for _ in range(attempts):
        proc = subprocess.run(cmd(), env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode == 0:
            return proc
        failures.append(proc.stdout[-2000:] + proc.stderr[-4000:])
    raise AssertionError("\n---- next attempt ----\n".join(failures))

