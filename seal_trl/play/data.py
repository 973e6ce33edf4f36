"""SEAL tasks as TRL data, and the rollout glue both trainers share: datasets of tasks, the env
pool and rollout outputs ``SEALGRPOTrainer`` uses, and a ``rollout_func`` for an unmodified
``GRPOTrainer``.

``make_dataset(env_id, split)`` gives one row per task of the split in TRL's standard
conversational form: a ``prompt`` of messages (what ``env.reset`` shows first), a ``tools``
column (the JSON schemas the env offers, as JSON text, which TRL reads) and the task in columns of its own: ``seed``,
``env_id``, ``task_id``, ``task_index``, ``split``. TRL hands a ``rollout_func`` only the
``prompt`` column, so the rollout finds each prompt's task by its messages (:class:`PromptTasks`,
built from the datasets it plays: ``make_rollout_func(..., tasks=train_dataset)``).
``make_sft_dataset`` gives the oracle's whole episodes (``messages`` with ``tool_calls`` and
``tool`` replies, and ``tools``) for TRL's ``SFTTrainer``.

``make_rollout_func(env_id, ...)`` returns ``rollout_func(prompts, trainer)`` with TRL's contract:
it plays every prompt's task in a batched multi-turn rollout and returns ``prompt_ids``,
``completion_ids``, ``logprobs``, ``env_mask`` and extra per-row keys that reach reward functions:
``env_reward`` (read it with :func:`env_reward`), ``seal_step_index``, ``seal_step_labels``,
``seal_passed``, ``seal_num_steps``, ``seal_task_id``.

Episodes of one GRPO group play the same task because every copy of a row carries the same
``seed`` and ``task_id``. With ``curriculum=True`` only the seed is passed and the env samples the
task by its curriculum weights (deterministic in the seed, so a group still shares one task).

Co-evolution on the stock path: ``make_rollout_func(..., coevolution=CoEvolution(...))`` hands
the co-evolution's surface to the pool's envs before every batch and, after every training
batch, counts the batch's diagnoses on this process (:meth:`seal_envs.CoEvolution.count`),
gathers the counts of every process through ``trainer.accelerator`` (``gather_object``, rank
order) and steps the co-evolution once on all of them. Counts add up in any order and the update
is deterministic, so under ``accelerate launch`` every rank applies the same patches and ends with
the same evolver and surface, as ``SEALGRPOTrainer`` does; with one process nothing is gathered.
Evaluation batches (``trainer.model.training`` false) play on separate envs that hold the
canonical surface frozen and update nothing. ``on_results`` sees only this process's episodes: an
evolver fed from it would evolve a different surface on every rank.

Why there is no ``environment_factory`` adapter: TRL's ``environment_factory`` exposes an
object's methods as Python tools to TRL's own tool loop, which (1) ends the rollout as soon as the
model answers in text, so the scripted later user turns of a SEAL task (and the reply to a
clarifying question) can never be played; (2) never shows the final answer to the environment
(``get_reward()`` takes no argument), so the verifier's response checks cannot run and rewards
would be wrong for every task whose user asks for information; (3) parses calls with the
tokenizer's response template, so malformed calls never reach the env and get no
``format_error`` label, and the turn labels never reach the loss; (4) builds tool schemas once
from signatures, so the evolving surface (hints in schemas, recovery feedback) cannot show. A
SEAL task would be played with changed semantics, which the project rules out. ``rollout_func``
has none of these limits and works with an unmodified ``GRPOTrainer``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .generate_fn import GenerateFn
from .rollout import EpisodeResult, MultiTurnRollout

if TYPE_CHECKING:
    from seal_envs.coevolution import CoEvolution

__all__ = ["EPISODE_COLUMN", "EnvPool", "PromptTasks", "env_reward", "gather_counts", "make_dataset",
           "make_rollout_func", "make_sft_dataset", "play_batch", "reset_args", "rollout_output"]

#: The columns that name a row's task (besides ``prompt`` and ``tools``).
TASK_COLUMNS = ("seed", "env_id", "task_id", "task_index", "split")


def _make_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> Any:
    import gymnasium as gym

    import seal_envs  # noqa: F401  (registers the ids)

    return gym.make(env_id, **dict(env_kwargs or {}))


def make_dataset(env_id: str = "seal/ToolUse-v0", split: str = "train", *, num_rows: int | None = None,
                 env_kwargs: Mapping[str, Any] | None = None, tasks: Sequence[Any] | None = None) -> Any:
    """An HF ``datasets.Dataset``: one conversational prompt per task of ``split`` (first
    ``num_rows``), or per task of ``tasks`` (``Task`` objects such as
    :func:`seal_envs.tasks.fresh_tasks` returns; ``task_index`` is then the position in ``tasks``)."""
    from datasets import Dataset

    env = _make_env(env_id, {"split": split, **dict(env_kwargs or {})})
    task_set = env.unwrapped.task_set
    size = len(task_set) if tasks is None else len(tasks)
    count = size if num_rows is None else min(int(num_rows), size)
    rows = []
    for index in range(count):
        if tasks is not None:
            seed, options = tasks[index].seed, {"task_id": tasks[index].task_id}
        else:
            seed = task_set.slot(index).seed  # every TaskSource places an index (seal_envs.core.source)
            options = {"index": index}
        _, info = env.reset(seed=seed, options=options)
        rows.append({"prompt": [{"role": m["role"], "content": m["content"]} for m in info["new_messages"]],
                     "tools": _json_tools(info["tools"]), "seed": int(seed), "env_id": env_id,
                     "task_id": info["task_id"], "task_index": index, "split": split})
    env.close()
    return Dataset.from_list(rows)


def _json_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """The tool list as JSON text, as TRL's trainers read a ``tools`` column: Arrow would merge
    schemas of different shapes into one struct and fill the keys a tool lacks with nulls."""
    return json.dumps(list(tools), ensure_ascii=False)


def make_sft_dataset(env_id: str = "seal/ToolUse-v0", split: str = "train", *, num_rows: int | None = None,
                     env_kwargs: Mapping[str, Any] | None = None, call_format: str = "hermes") -> Any:
    """An HF ``datasets.Dataset`` of the oracle's episodes for TRL's ``SFTTrainer``: ``messages``
    (the whole conversation: ``tool_calls``, ``tool`` replies, the later user turns, the
    answers), ``tools`` (the schemas shown at the end) and the task columns. Only passing
    episodes are kept (the oracle passes every native task)."""
    from datasets import Dataset

    from seal_envs.agents import OracleAgent, run_episode

    env = _make_env(env_id, {"split": split, "call_format": call_format, **dict(env_kwargs or {})})
    task_set = env.unwrapped.task_set
    rows = []
    for index in range(len(task_set) if num_rows is None else min(int(num_rows), len(task_set))):
        seed = task_set.slot(index).seed
        reward, info, _ = run_episode(env, OracleAgent(call_format=call_format), seed=seed, options={"index": index})
        if not info["verdict"]["passed"]:
            continue
        rows.append({"messages": [_standard_message(m) for m in info["messages"]], "tools": _json_tools(info["tools"]),
                     "seed": int(seed), "env_id": env_id, "task_id": info["task_id"], "task_index": index,
                     "split": split})
    env.close()
    return Dataset.from_list(rows)


def _standard_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One message with the same keys for every role (Arrow's one type per column): ``content``,
    ``tool_calls`` (``None`` unless an assistant called tools; arguments as JSON text), ``name``."""
    calls = message.get("tool_calls")
    return {"role": message["role"], "content": message.get("content") or "",
            "tool_calls": [{"type": "function", "function": {"name": c["function"]["name"],
                                                             "arguments": c["function"]["arguments"]}}
                           for c in calls] if calls else None,
            "name": message.get("name")}


def _prompt_key(prompt: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps([[m.get("role"), m.get("content")] for m in prompt], ensure_ascii=False)


class PromptTasks:
    """Each prompt's task, found by its messages: TRL hands a ``rollout_func`` the ``prompt``
    column only. Built from the datasets a trainer plays (:func:`make_dataset`'s rows). Tasks whose
    opening messages are identical (``shared``) are played as the first of them: the model sees the
    same prompt, so nothing it could learn tells them apart."""

    def __init__(self, *datasets: Any) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.shared = 0
        for dataset in datasets:
            if dataset is None:
                continue
            for row in dataset:
                key = _prompt_key(row["prompt"])
                if key in self.rows:
                    self.shared += self.rows[key]["task_id"] != row["task_id"]
                    continue
                self.rows[key] = {"seed": row["seed"], "task_id": row["task_id"], "env_id": row["env_id"]}

    def __call__(self, prompt: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        row = self.rows.get(_prompt_key(prompt))
        if row is None:
            raise ValueError("a prompt that is not in the rollout's datasets: build the dataset with "
                             "seal_trl.make_dataset and pass it to make_rollout_func(..., tasks=dataset)")
        return dict(row)


def reset_args(row: Mapping[str, Any], curriculum: bool = False) -> tuple[int | None, dict[str, Any] | None]:
    """``(seed, options)`` for ``env.reset`` from a dataset row (or prompt metadata)."""
    seed = row.get("seed")
    if curriculum or not row.get("task_id"):
        return seed, None
    return seed, {"task_id": row["task_id"]}


def env_reward(prompts: Any = None, completions: Any = None, env_reward: Sequence[float] | None = None,
               **kwargs: Any) -> list[float]:
    """Reward function for TRL: the environment's reward that the rollout returned per row."""
    if env_reward is None:
        raise ValueError("no 'env_reward' key reached the reward function; use a SEAL rollout_func")
    return [float(r) for r in env_reward]


class EnvPool:
    """Environments reused across rollouts: ``get(n)`` returns the first ``n``, creating more if needed."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None,
                 factory: Callable[[], Any] | None = None) -> None:
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.factory = factory or (lambda: _make_env(self.env_id, self.env_kwargs))
        self.envs: list[Any] = []
        self.on_create: list[Callable[[Any], None]] = []  # e.g. set the current surface

    def get(self, n: int) -> list[Any]:
        while len(self.envs) < n:
            env = self.factory()
            for hook in self.on_create:
                hook(env)
            self.envs.append(env)
        return self.envs[:n]

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs = []


#: The rollout column that carries each row's whole :class:`~seal_trl.play.rollout.EpisodeResult`: TRL
#: merges a rollout's extra columns into the rows it hands back, so a trainer reads the episodes there.
EPISODE_COLUMN = "seal_episode"


def play_batch(rollout: MultiTurnRollout, envs: Sequence[Any], rows: Sequence[Mapping[str, Any]],
               coevolution: CoEvolution | None = None, *, curriculum: bool = False) -> list[EpisodeResult]:
    """One generation batch, for ``SEALGRPOTrainer`` and the stock ``rollout_func`` alike: the
    co-evolution's surface on the envs (evaluation envs keep the canonical one), env ``i`` reset to
    row ``i``'s task (``curriculum``: to a task the env's weights pick from the row's seed), then the
    batched multi-turn rollout."""
    if coevolution is not None:
        coevolution.apply(envs)
    resets = [reset_args(row, curriculum) for row in rows]
    return rollout.run(list(envs), [s for s, _ in resets], [o for _, o in resets])


def rollout_output(results: Sequence[EpisodeResult]) -> dict[str, Any]:
    """TRL's ``rollout_func`` dict for finished episodes (one per prompt, in order)."""
    with_logprobs = bool(results) and results[0].logprobs is not None
    return {
        "prompt_ids": [r.prompt_ids for r in results],
        "completion_ids": [r.completion_ids for r in results],
        "logprobs": [r.logprobs for r in results] if with_logprobs else None,
        "env_mask": [r.env_mask for r in results],
        "env_reward": [r.reward for r in results],
        "seal_step_index": [r.step_index for r in results],
        "seal_step_labels": [r.step_labels for r in results],
        "seal_official_turn_tags": [r.info.get("official_turn_tags") for r in results],
        "seal_passed": [r.passed for r in results],
        "seal_num_steps": [r.num_steps for r in results],
        "seal_task_id": [r.info.get("task_id") for r in results],
        EPISODE_COLUMN: list(results),
    }


def gather_counts(trainer: Any, local: Any) -> list[Any]:
    """Every process's ``local`` value in rank order (``[local]`` with one process): the counts
    :meth:`seal_envs.CoEvolution.step` merges. A collective call: every rank must make it."""
    if trainer.accelerator.num_processes <= 1:
        return [local]
    from accelerate.utils import gather_object

    return gather_object([local])


def make_rollout_func(env_id: str = "seal/ToolUse-v0", *, env_kwargs: Mapping[str, Any] | None = None,
                      max_episode_steps: int = 8, max_new_tokens: int = 128, max_completion_length: int | None = None,
                      curriculum: bool = False, generate_fn: GenerateFn | None = None,
                      on_results: Callable[[list[EpisodeResult]], None] | None = None,
                      coevolution: CoEvolution | None = None, tasks: Any = None, tools_in_prompt: str = "auto"):
    """A ``rollout_func(prompts, trainer)`` for an unmodified ``GRPOTrainer`` (use ``env_reward``).

    ``max_completion_length`` defaults to ``trainer.args.max_completion_length`` and bounds the whole
    episode; the env's ``max_steps`` defaults to ``max_episode_steps``. ``generate_fn`` replaces the
    trainer's policy sampling (tests, external servers); ``on_results`` receives the finished
    episodes of every call on this process. ``coevolution`` (a :class:`seal_envs.CoEvolution`)
    evolves one training surface for all processes: its surface reaches the envs before every
    batch, and every training batch's counts, gathered from all processes, step it (see the module
    docstring). Pass ``curriculum=True`` with ``CoEvolution(curriculum=True)`` for its task weights.
    ``tools_in_prompt`` is :class:`~seal_trl.play.rollout.MultiTurnRollout`'s (a template without tools).
    The returned function carries ``pool``, ``eval_pool``, ``state`` and ``coevolution``.
    """
    if tasks is None:
        raise ValueError("make_rollout_func needs tasks=: the dataset(s) the trainer plays (make_dataset's), "
                         "since TRL hands a rollout_func only the prompts")
    prompt_tasks = PromptTasks(*(tasks if isinstance(tasks, (list, tuple)) else [tasks]))
    pool = EnvPool(env_id, {"max_steps": max_episode_steps, **dict(env_kwargs or {})})
    eval_pool = EnvPool(env_id, {**pool.env_kwargs, "evaluation": True})
    state: dict[str, Any] = {}
    if coevolution is not None:
        pool.on_create.append(coevolution.apply)

    def rollout_func(prompts: list[list[dict[str, Any]]], trainer: Any) -> dict[str, Any]:
        if "rollout" not in state:
            from .generation import sync_active_fn, trainer_generate_fn

            budget = max_completion_length if max_completion_length is not None else trainer.args.max_completion_length
            state["rollout"] = MultiTurnRollout(
                trainer.processing_class, generate_fn or trainer_generate_fn(trainer), max_episode_steps=max_episode_steps,
                max_new_tokens=max_new_tokens, max_completion_length=budget,
                chat_template_kwargs=getattr(trainer, "chat_template_kwargs", None),
                sync_active=sync_active_fn(trainer), eos_token_ids=getattr(trainer, "eos_token_ids", None),
                tools_in_prompt=tools_in_prompt)
        # without a co-evolution every batch plays on ``pool``, as it always did
        evolving = coevolution is not None and bool(trainer.model.training)
        evaluating = coevolution is not None and not evolving
        envs = (eval_pool if evaluating else pool).get(len(prompts))
        results = play_batch(state["rollout"], envs, [prompt_tasks(p) for p in prompts],
                             coevolution if evolving else None, curriculum=curriculum and not evaluating)
        if on_results is not None:
            on_results(results)
        if evolving and coevolution.active:
            from seal_envs.coevolution import CoEvolution

            coevolution.step(gather_counts(trainer, CoEvolution.count(r.info for r in results)))
            coevolution.apply(pool.envs)
        return rollout_output(results)

    rollout_func.pool = pool  # type: ignore[attr-defined]
    rollout_func.eval_pool = eval_pool  # type: ignore[attr-defined]
    rollout_func.state = state  # type: ignore[attr-defined]
    rollout_func.coevolution = coevolution  # type: ignore[attr-defined]
    return rollout_func
