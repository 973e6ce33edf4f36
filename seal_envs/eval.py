"""Evaluation: success rate and tau-bench's pass^k over a split, with per-domain and per-label tables.

Every task of the split (or the first ``limit`` of them) runs ``n >= k`` times on the canonical
(frozen) surface. The task is the same in every trial; only the agent's sampling seed changes
(trial ``j`` of every task uses seed ``seed + j``). Then, as tau-bench defines it,

    pass^k = mean over tasks of C(c, k) / C(n, k)

where ``c`` is the number of the task's ``n`` trials that passed: the chance that ``k`` trials
drawn without replacement from the ``n`` all pass. pass^1 is the success rate; pass^k falls as
``k`` grows unless the agent is reliable. (:func:`pass_at_k` is the other, optimistic metric:
the chance that at least one of ``k`` passes.)

Agents come in two shapes:

- a *factory* ``seed -> agent`` where the agent has ``reset()`` and ``act(env, info) -> action``
  (:class:`~seal_envs.agents.OracleAgent`, :class:`~seal_envs.agents.RandomAgent`,
  :class:`~seal_envs.openai_agent.OpenAIChatAgent`): one agent per episode;
- a *batch agent* with ``start(seeds)`` and ``act_batch(envs, infos, slots) -> actions``
  (``seal_trl.agent.agents.HFBatchAgent``): the episodes of a batch run in lockstep and the agent
  answers all active ones at once (one ``generate`` call per turn).
  :class:`~seal_envs.agents.PerEpisodeAgents` turns a factory into one, and with ``concurrency > 1`` it asks the
  episodes' agents at the same time (an asyncio gather over a thread pool): what
  :class:`~seal_envs.openai_agent.OpenAIBatchAgent` (``make_agent("openai:...")``) uses to keep
  many requests in flight.

Every episode record keeps its ``transcript``: the episode's final ``info["messages"]``, the
conversation as the agent saw it (system prompt, user turns, the agent's messages, tool results),
so ``eval.json`` can be read back episode by episode. ``eval.md`` holds only the tables.

Pure Python: no torch. The CLI (``seal eval``) is a thin layer over :func:`evaluate`.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import gymnasium as gym

from seal_envs.agents import AgentFailure, BatchAgent, PerEpisodeAgents
from seal_envs.core.frozen import thaw
from seal_envs.core.diagnosis import LABELS
from seal_envs.core.official import OFFICIAL_TAG_OF_LABEL

__all__ = ["EvalResult", "evaluate", "make_agent", "pass_at_k", "pass_hat_k", "task_pass_hat_k"]


# -- metrics -------------------------------------------------------------------------------
def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau-bench's pass^k for one task: C(c, k) / C(n, k), the chance that ``k`` of its ``n``
    trials drawn without replacement all passed (``c`` passed)."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The optimistic pass@k for one task: 1 - C(n - c, k) / C(n, k), the chance that at least
    one of ``k`` trials drawn without replacement passed."""
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def task_pass_hat_k(outcomes: Mapping[str, Sequence[bool]], k: int) -> float:
    """pass^k averaged over tasks, from ``{task_id: [passed of each trial]}``."""
    if not outcomes:
        return 0.0
    return sum(pass_hat_k(len(v), sum(map(bool, v)), k) for v in outcomes.values()) / len(outcomes)


# -- agents --------------------------------------------------------------------------------
def make_agent(spec: str, **options: Any) -> Callable[[int], Any] | BatchAgent:
    """The agent named by ``spec``, as :func:`evaluate` takes it.

    ``oracle``, ``random`` and ``openai:<base url>#<model>`` (any chat-completions server: an
    :class:`~seal_envs.openai_agent.OpenAIBatchAgent` with ``concurrency`` requests in flight,
    default :data:`~seal_envs.openai_agent.DEFAULT_CONCURRENCY`; the other ``options`` go to
    :class:`~seal_envs.openai_agent.OpenAIChatAgent`, ``tools_in_prompt`` among them). Local transformers models
    (``hf:<model>``) need torch, so they live in ``seal_trl.agent.agents.make_agent``, which takes every
    spec. Unused ``options`` are ignored by the agents that take none.
    """
    from seal_envs.agents import OracleAgent, RandomAgent

    if spec == "oracle":
        return lambda seed: OracleAgent()
    if spec == "random":
        return lambda seed: RandomAgent(seed)
    if spec.startswith("openai:"):
        from seal_envs.openai_agent import DEFAULT_CONCURRENCY, OpenAIBatchAgent, OpenAIChatAgent, parse_openai_spec

        base_url, model = parse_openai_spec(spec)
        keep = {k: v for k, v in options.items() if k in OpenAIChatAgent.OPTIONS and v is not None}
        concurrency = options.get("concurrency")
        return OpenAIBatchAgent(base_url, model, concurrency=DEFAULT_CONCURRENCY if concurrency is None else concurrency,
                                **keep)
    raise ValueError(f"unknown agent {spec!r}: use oracle, random or openai:<base url>#<model> "
                     "(hf:<model> through seal_trl.agent.agents.make_agent)")


# -- results -------------------------------------------------------------------------------
@dataclass
class EvalResult:
    """Every episode of an evaluation and the tables computed from them."""

    env_id: str
    agent: str
    split: str
    k: int
    n: int
    seed: int
    episodes: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    #: What the agent says about how it ran (its ``eval_record()``): for an OpenAI agent, where the
    #: tools went and what the server's probe found. Empty for agents that say nothing.
    agent_info: dict[str, Any] = field(default_factory=dict)

    # the numbers --------------------------------------------------------------------------
    def outcomes(self, domain: str | None = None) -> dict[str, list[bool]]:
        out: dict[str, list[bool]] = defaultdict(list)
        for e in self.episodes:
            if domain is None or e["domain"] == domain:
                out[e["task_id"]].append(bool(e["passed"]))
        return dict(out)

    @property
    def num_tasks(self) -> int:
        return len(self.outcomes())

    @property
    def success_rate(self) -> float:
        return sum(e["passed"] for e in self.episodes) / len(self.episodes) if self.episodes else 0.0

    @property
    def mean_reward(self) -> float:
        return sum(e["reward"] for e in self.episodes) / len(self.episodes) if self.episodes else 0.0

    def pass_hat(self, k: int | None = None, domain: str | None = None) -> float:
        return task_pass_hat_k(self.outcomes(domain), self.k if k is None else k)

    @property
    def pass_hat_k(self) -> float:
        return self.pass_hat(self.k)

    def pass_hat_curve(self, domain: str | None = None) -> dict[int, float]:
        """pass^j for j = 1..n (pass^1 equals the success rate)."""
        return {j: self.pass_hat(j, domain) for j in range(1, self.n + 1)}

    def domains(self) -> list[str]:
        return sorted({e["domain"] for e in self.episodes})

    def per_domain(self) -> dict[str, dict[str, Any]]:
        table = {}
        for d in self.domains():
            eps = [e for e in self.episodes if e["domain"] == d]
            table[d] = {
                "tasks": len(self.outcomes(d)),
                "episodes": len(eps),
                "success_rate": sum(e["passed"] for e in eps) / len(eps),
                "mean_reward": sum(e["reward"] for e in eps) / len(eps),
                f"pass^{self.k}": self.pass_hat(self.k, d),
            }
        return table

    def per_label(self) -> dict[str, dict[str, Any]]:
        """Per label: steps with it, its share of all steps, episodes that have it at least once
        and how many of those passed, and the official SEAL tag it maps to."""
        steps: Counter = Counter()
        episodes: Counter = Counter()
        passed: Counter = Counter()
        total = 0
        for e in self.episodes:
            total += len(e["labels"])
            steps.update(e["labels"])
            for lb in set(e["labels"]):
                episodes[lb] += 1
                passed[lb] += int(e["passed"])
        order = [lb for lb in LABELS if lb in steps] + sorted(set(steps) - set(LABELS))
        return {lb: {"steps": steps[lb], "fraction": steps[lb] / total if total else 0.0,
                     "episodes": episodes[lb], "episodes_passed": passed[lb],
                     "official_tag": OFFICIAL_TAG_OF_LABEL.get(lb, "")} for lb in order}

    @property
    def official_progress(self) -> float:
        """Mean official SEAL progress (passed / scorable user turns) over episodes."""
        return sum(e.get("official_progress", 0.0) for e in self.episodes) / len(self.episodes) if self.episodes else 0.0

    def bfcl_categories(self) -> dict[str, dict[str, Any]]:
        """BFCL multi-turn accuracy per category, and ``overall`` as BFCL's leaderboard computes
        it: the unweighted mean of the category accuracies (so a category's size does not weigh).
        Empty when the evaluation holds no BFCL episodes."""
        table = {}
        for d in self.domains():
            if not d.startswith("bfcl_"):
                continue
            eps = [e for e in self.episodes if e["domain"] == d]
            table[d.removeprefix("bfcl_")] = {
                "episodes": len(eps), "accuracy": sum(e["passed"] for e in eps) / len(eps),
                "official_progress": sum(e.get("official_progress", 0.0) for e in eps) / len(eps)}
        if table:
            table["overall"] = {
                "episodes": sum(r["episodes"] for r in table.values()),
                "accuracy": sum(r["accuracy"] for r in table.values()) / len(table),
                "official_progress": sum(r["official_progress"] for r in table.values()) / len(table)}
        return table

    def summary(self) -> dict[str, Any]:
        return {
            "env_id": self.env_id, "agent": self.agent, "split": self.split, "k": self.k, "n": self.n,
            "seed": self.seed, "tasks": self.num_tasks, "episodes": len(self.episodes),
            "success_rate": self.success_rate, "mean_reward": self.mean_reward,
            "official_progress": self.official_progress,
            f"pass^{self.k}": self.pass_hat_k, "pass_hat_k": self.pass_hat_k,
            "pass_hat_curve": {str(j): v for j, v in self.pass_hat_curve().items()},
            "seconds": round(self.seconds, 3),
        }

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary(), "agent_info": self.agent_info,
                "per_domain": self.per_domain(), "per_label": self.per_label(),
                "bfcl_categories": self.bfcl_categories(),
                "per_task": {t: {"n": len(v), "c": sum(v), f"pass^{self.k}": pass_hat_k(len(v), sum(v), self.k)}
                             for t, v in sorted(self.outcomes().items())},
                "episodes": self.episodes}

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> "EvalResult":
        s = d["summary"]
        return EvalResult(s["env_id"], s["agent"], s["split"], int(s["k"]), int(s["n"]), int(s["seed"]),
                          list(d["episodes"]), float(s.get("seconds", 0.0)), dict(d.get("agent_info") or {}))

    def to_markdown(self) -> str:
        k = self.k
        lines = [
            f"# Evaluation: `{self.agent}` on `{self.env_id}` ({self.split})",
            "",
            f"{self.num_tasks} tasks x {self.n} trial{'s' if self.n != 1 else ''} = {len(self.episodes)} episodes, "
            f"canonical surface, {self.seconds:.1f} s.",
            *_tools_sentence(self.agent_info),
            "",
            "| metric | value |",
            "| --- | --- |",
            f"| success rate | {self.success_rate:.4f} |",
            f"| mean reward | {self.mean_reward:.4f} |",
            f"| official progress | {self.official_progress:.4f} |",
        ]
        lines += [f"| pass^{j} | {v:.4f} |" for j, v in self.pass_hat_curve().items() if j <= k]
        lines += ["", "## Per domain", "", f"| domain | tasks | episodes | success rate | pass^{k} |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for d, row in self.per_domain().items():
            lines.append(f"| {d} | {row['tasks']} | {row['episodes']} | {row['success_rate']:.4f} | "
                         f"{row[f'pass^{k}']:.4f} |")
        bfcl = self.bfcl_categories()
        if bfcl:
            lines += ["", "## BFCL multi-turn (overall: the mean of the category accuracies, as the leaderboard)", "",
                      "| category | episodes | accuracy | official progress |", "| --- | ---: | ---: | ---: |"]
            lines += [f"| {c} | {r['episodes']} | {r['accuracy']:.4f} | {r['official_progress']:.4f} |"
                      for c, r in bfcl.items()]
        lines += ["", "## Per label (one label per assistant step)", "",
                  "| label | official tag | steps | share of steps | episodes | of them passed |",
                  "| --- | --- | ---: | ---: | ---: | ---: |"]
        for lb, row in self.per_label().items():
            lines.append(f"| {lb} | {row['official_tag']} | {row['steps']} | {row['fraction']:.4f} | "
                         f"{row['episodes']} | {row['episodes_passed']} |")
        return "\n".join(lines) + "\n"

    def save(self, out_dir: str | Path, stem: str = "eval") -> dict[str, Path]:
        """Write ``<stem>.json`` (everything: episodes with their transcripts) and ``<stem>.md``
        (the tables only)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = {"json": out / f"{stem}.json", "markdown": out / f"{stem}.md"}
        # a transcript may hold a lone surrogate (a server may send "\ud800"): written as that JSON
        # escape, so the file is UTF-8 and reads back to the same string
        paths["json"].write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8",
                                 errors="backslashreplace")
        paths["markdown"].write_text(self.to_markdown(), encoding="utf-8", errors="backslashreplace")
        return paths


def _tools_sentence(agent_info: Mapping[str, Any]) -> list[str]:
    """The line of ``eval.md`` that says where an OpenAI agent's tools went, if it said."""
    where = agent_info.get("tools_sent_in")
    if not where:
        return []
    probe = agent_info.get("tools_probe") or {}
    text = "the system message (as text)" if where == "system_message" else "the request's `tools` field"
    return ["", f"Tools went in {text} (--tools-in-prompt {agent_info.get('tools_in_prompt')}; "
                f"the server's probe: {probe.get('verdict', 'not run')})."]


# -- the loop ------------------------------------------------------------------------------
def _episode_record(index: int, trial: int, seed: int, reward: float, info: Mapping[str, Any],
                    actions: int) -> dict[str, Any]:
    verification = info["verdict"]
    return {
        "task_id": info["task_id"], "index": index, "domain": info["domain"],
        "difficulty": info.get("difficulty"), "trial": trial, "seed": seed, "reward": float(reward),
        "passed": bool(verification["passed"]), "progress": float(verification["progress"]),
        "actions": actions, "labels": [lb["label"] for lb in info["step_labels"]],
        "official_progress": float(info.get("official_progress", 0.0)),
        "official_turn_tags": list(info.get("official_turn_tags", [])),
        "failed_checks": [c["name"] for c in verification["checks"] if not c["passed"]],
        "transcript": thaw(info["messages"]),  # the conversation as the agent saw it
    }


def evaluate(env_id: str, agent_factory: Callable[[int], Any] | BatchAgent, split: str = "test", k: int = 1,
             limit: int | None = None, *, n: int | None = None, seed: int = 0, batch_size: int = 16,
             env_kwargs: Mapping[str, Any] | None = None, agent_name: str | None = None,
             indices: Iterable[int] | None = None, max_actions: int = 200,
             progress: Callable[[int, int], None] | None = None) -> EvalResult:
    """Run every task of ``split`` (the first ``limit``, or ``indices``) ``n`` times (default
    ``k``) and return the :class:`EvalResult`.

    ``agent_factory`` is a factory ``seed -> agent`` or a :class:`BatchAgent`. Trial ``j`` uses
    agent seed ``seed + j``. Episodes run in lockstep batches of ``batch_size``: each round asks
    the agent for the actions of all still-active episodes at once. Evaluation envs use the
    canonical, frozen surface (``evaluation=True``).
    """
    n = k if n is None else n
    if k < 1 or n < k:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    kwargs = {"split": split, "evaluation": True, **(env_kwargs or {})}
    probe = gym.make(env_id, **kwargs)
    size = len(probe.unwrapped.task_set.with_split(split))
    probe.close()
    if indices is None:
        indices = range(size if limit is None else min(limit, size))
    indices = list(indices)
    if not indices:
        raise ValueError(f"no tasks to evaluate (split {split!r} of {env_id} has {size}, limit={limit})")
    agent = agent_factory if hasattr(agent_factory, "act_batch") else PerEpisodeAgents(agent_factory)
    jobs = [(index, trial, seed + trial) for index in indices for trial in range(n)]
    result = EvalResult(env_id, agent_name or getattr(agent_factory, "name", type(agent_factory).__name__),
                        split, k, n, seed)
    envs = [gym.make(env_id, **kwargs) for _ in range(min(batch_size, len(jobs)))]
    start = time.perf_counter()
    if progress is not None:  # a bar starts now, so its rate and ETA count the first batch too
        progress(0, len(jobs))
    for b in range(0, len(jobs), batch_size):
        batch = jobs[b:b + batch_size]
        agent.start([s for _, _, s in batch])
        infos: list[dict] = []
        for env, (index, _, s) in zip(envs, batch):
            infos.append(env.reset(seed=s, options={"split": split, "index": index})[1])
        active = list(range(len(batch)))
        counts = [0] * len(batch)
        while active:
            try:
                actions = agent.act_batch([envs[i] for i in active], [infos[i] for i in active], active)
            except Exception as e:  # noqa: BLE001 - a batch agent that fails fails every active episode
                actions = [AgentFailure(e)] * len(active)
            still = []
            for i, action in zip(active, actions):
                error = None
                if isinstance(action, AgentFailure):
                    error = action.message
                    reward, infos[i] = envs[i].unwrapped.force_end()
                    terminated = truncated = True
                else:
                    _, reward, terminated, truncated, infos[i] = envs[i].step(action)
                    counts[i] += 1
                if terminated or truncated:
                    index, trial, s = batch[i]
                    record = _episode_record(index, trial, s, reward, infos[i], counts[i])
                    if error is not None:
                        record["agent_error"] = error
                    result.episodes.append(record)
                elif counts[i] >= max_actions:
                    raise RuntimeError(f"episode {infos[i]['task_id']} did not end within {max_actions} actions")
                else:
                    still.append(i)
            active = still
        if progress is not None:
            progress(min(b + batch_size, len(jobs)), len(jobs))
    for env in envs:
        env.close()
    result.seconds = time.perf_counter() - start
    record = getattr(agent, "eval_record", None)
    if callable(record):
        result.agent_info = dict(record())
    result.episodes.sort(key=lambda e: (e["index"], e["trial"]))
    return result
