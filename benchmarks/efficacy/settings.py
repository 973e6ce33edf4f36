"""The study's two sizes: ``FULL`` (the 2-hour study on 2 dedicated CPU cores) and ``QUICK``.

Every arm of a study gets the same RL sample budget: ``steps x tasks_per_step x num_generations``
episodes, from the same warm start, with the same seeds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from seal_trl.agent.warmstart import WarmStartConfig


@dataclass
class RLConfig:
    steps: int = 40
    tasks_per_step: int = 8
    num_generations: int = 8
    temperature: float = 1.5
    lr: float = 2e-4
    reward_mode: str = "progress"  # env kwarg: fraction of user turns passed (binary: all or nothing)
    difficulties: tuple[int, ...] = (1, 2)  # RL tasks (the curriculum arm samples among these too)
    max_episode_steps: int = 6
    max_new_tokens_per_step: int = 80
    evolver_min_episodes: int = 8

    @property
    def episodes(self) -> int:
        return self.steps * self.tasks_per_step * self.num_generations

    def to_dict(self) -> dict:
        d = asdict(self)
        d["difficulties"] = list(self.difficulties)
        d["episodes"] = self.episodes
        return d


@dataclass
class EvalConfig:
    test_tasks: int = 200
    ood_tasks: int = 200
    max_new_tokens: int = 80
    max_steps: int = 8
    batch_size: int = 40


@dataclass
class StudySettings:
    name: str
    warmstart: WarmStartConfig
    rl: RLConfig
    eval: EvalConfig
    seeds: tuple[int, ...] = (0, 1, 2)
    notes: list[str] = field(default_factory=list)


# One domain (bank: 9 tools, prompts ~530 tokens), measured on 2 CPU cores: the 128x4 warm start
# trains at ~12.9k tokens/s (shared-prefix batches) and reaches 40% on difficulty-1 test tasks in
# 25 minutes; an RL step of 64 episodes takes 30-40 s on 2 threads (55 s on 1 thread beside a second
# worker) and a 100+100-task greedy evaluation ~35 s. 18 arm runs as two 1-thread workers take about
# an hour, so warm start + study fit in 2 hours. The same warm start on all five train domains
# scored 0% after 30 minutes (see docs/benchmarks.md), which leaves RL nothing to reinforce.
FULL = StudySettings(
    name="full",
    warmstart=WarmStartConfig(minutes=25.0, hidden_size=128, num_layers=4, num_heads=4, batch_size=16, lr=3e-3,
                              warmup_steps=20, difficulties=(1, 2, 3, 4), extra_tasks=6000, domains=("bank",)),
    rl=RLConfig(steps=6, tasks_per_step=8, num_generations=8, max_episode_steps=4, max_new_tokens_per_step=64, lr=5e-4),
    eval=EvalConfig(test_tasks=100, ood_tasks=100, max_new_tokens=64, max_steps=6, batch_size=50),
    seeds=(0, 1, 2),
)

QUICK = StudySettings(
    name="quick",
    warmstart=WarmStartConfig(minutes=4.0, hidden_size=128, num_layers=4, num_heads=4, batch_size=16, lr=3e-3,
                              warmup_steps=20, difficulties=(1, 2, 3, 4), extra_tasks=1000, domains=("bank",)),
    rl=RLConfig(steps=2, tasks_per_step=4, num_generations=4, max_episode_steps=3, max_new_tokens_per_step=64, lr=5e-4),
    eval=EvalConfig(test_tasks=20, ood_tasks=20, max_new_tokens=64, max_steps=5, batch_size=20),
    seeds=(0, 1),
)
