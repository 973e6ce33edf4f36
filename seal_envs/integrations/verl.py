"""SEAL environments as a verl agent loop (verl 0.9: ``verl.experimental.agent_loop``).

Importing this module imports verl and registers the loop ``seal_agent``; a dataset row whose
``agent_name`` column is ``seal_agent`` is played by :class:`SealAgentLoop`:

* the task comes from the row (``task_id``, ``index`` or ``seed``, optionally ``env_id``,
  ``split``, ``domain``, ``difficulty``; at the top of the row or in ``extra_info``);
* every turn, the loop asks ``server_manager.generate`` for the next assistant message, decodes
  it, hands the text to the env, and appends the env's reply (tool results, the simulated user)
  to the token stream with verl's Continuous Token builder, masked 0 so only the model's own
  tokens are trained; the loop stops when the episode ends or the response budget is spent (the
  episode is then verified as the env's step budget would);
* ``reward_score`` is the episode's reward; ``extra_fields["seal"]`` is the final record
  (verdict, per-step labels, official per-user-turn tags and progress, task, surface version);
  ``extra_fields["seal_token_weights"]`` holds SEAL's per-token advantage weights (one per
  response token, 0 on env tokens) and ``extra_fields["seal_step_index"]`` the turn of each
  response token. verl puts ``extra_fields`` into ``non_tensor_batch``.

verl 0.9.1 calls a registered advantage estimator (``core_algos.register_adv_est``) with
``token_level_rewards``, ``response_mask``, ``index`` and ``config`` only (``ray_trainer.
compute_advantage``), so an estimator cannot see per-sample fields: the weights are the loop's
output, applied to the batch after ``compute_advantage`` by :func:`apply_seal_weights` (or by
:func:`install_weighting`, which wraps verl's ``compute_advantage`` to do it).

Configuration: ``actor_rollout_ref.rollout.agent.agent_loop_config_path`` may name a YAML list
with an entry ``{name: seal_agent, _target_: seal_envs.integrations.verl.SealAgentLoop,
surface_channel: /shared/surface.json, weighting: {mode: turn}, env_kwargs: {max_steps: 12}}``;
verl passes the extra keys to the constructor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register

from seal_envs.core.call_formats import CALL_MARKER_TOKENS
from seal_envs.core.weighting import WeightingConfig, token_advantage_weights, step_index_from_mask
from seal_envs.integrations.episode import DEFAULT_ENV_ID, RowError, TextEpisode, failed_record, token_weights_for

__all__ = ["AGENT_NAME", "SealAgentLoop", "apply_seal_weights", "install_weighting"]

AGENT_NAME = "seal_agent"
WEIGHTS_KEY, TURNS_KEY, RECORD_KEY = "seal_token_weights", "seal_step_index", "seal"


def _channel(channel: Any) -> Any:
    """A channel object as given, or a path for the shared ``SurfaceChannel`` (what a YAML holds)."""
    if channel is None or hasattr(channel, "latest"):
        return channel
    from seal_envs.integrations.channel import SurfaceChannel  # issue 28a's cross-process channel

    return SurfaceChannel(channel)


def _weighting(weighting: Any) -> WeightingConfig:
    if isinstance(weighting, WeightingConfig):
        return weighting
    return WeightingConfig.from_dict(dict(weighting) if weighting is not None else None)


class ActionText:
    """Generated ids as the text ``env.step`` reads: special tokens dropped except those that
    carry a tool call (Llama's ``<|python_tag|>``, Mistral's ``[TOOL_CALLS]``), which
    ``skip_special_tokens=True`` would lose (the same rule as ``seal_trl.play.chat.ActionDecoder``)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        for token_id, token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items():
            if getattr(token, "special", False):
                special.add(token_id)
        vocab = tokenizer.get_vocab()
        self.drop = frozenset(special - {vocab[t] for t in CALL_MARKER_TOKENS if t in vocab})

    def __call__(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([i for i in ids if i not in self.drop], skip_special_tokens=False)


@register(AGENT_NAME)
class SealAgentLoop(AgentLoopBase):
    """A SEAL episode as one verl trajectory (see the module docstring).

    ``surface_channel``: a ``SurfaceChannel`` (or its path) whose newest surface training envs
    show at reset; ``weighting``: a :class:`~seal_envs.core.weighting.WeightingConfig` or its
    fields; ``env_id``: the id for rows that name none; ``env_kwargs``: for ``gym.make``;
    ``max_episode_steps``: actions per episode at most (default: the env's ``max_steps``).
    """

    def __init__(self, *args: Any, surface_channel: Any = None, weighting: Any = None, env_id: str = DEFAULT_ENV_ID,
                 env_kwargs: Mapping[str, Any] | None = None, max_episode_steps: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.channel = _channel(surface_channel)
        self.weighting = _weighting(weighting)
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.max_episode_steps = max_episode_steps
        self.response_length = self.rollout_config.response_length
        self.decode = ActionText(self.tokenizer)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        try:
            episode = TextEpisode.from_row(kwargs, channel=self.channel, default_env_id=self.env_id, **self.env_kwargs)
        except RowError as e:
            return await self._failed(str(e))
        try:
            return await self._play(episode, sampling_params)
        finally:
            episode.close()

    async def _play(self, episode: TextEpisode, sampling_params: dict[str, Any]) -> AgentLoopOutput:
        metrics: dict[str, Any] = {}
        prompt_ids = await self.ct_build_initial_tokens(list(episode.messages), tools=episode.tools or None)
        ids, mask, logprobs = list(prompt_ids), [], []
        request_id = uuid4().hex
        limit = self.max_episode_steps or getattr(episode.env.unwrapped, "max_steps", None)
        while not episode.done and len(mask) < self.response_length and (limit is None or episode.steps < limit):
            out = await self.server_manager.generate(request_id=request_id, prompt_ids=ids,
                                                     sampling_params=sampling_params)
            merged, mask, aligned = await self.ct_merge_assistant_token(
                ids, list(out.token_ids), mask, logprobs if (logprobs or out.log_probs) else None,
                assistant_logprobs=out.log_probs or None)
            ids, logprobs = merged.token_ids, aligned if aligned is not None else logprobs
            seen = len(episode.messages)
            episode.step(self.decode(out.token_ids))
            if episode.done or len(mask) >= self.response_length:
                break
            merged, mask, aligned = await self.ct_merge_context_msg(  # the assistant message and the env's reply
                episode.messages[: seen + 1], list(episode.messages), ids, mask, logprobs or None,
                tools=episode.tools or None)
            ids, logprobs = merged.token_ids, aligned or []
        record = episode.finish()
        response = ids[len(ids) - len(mask):] if mask else []
        mask = mask[: self.response_length]
        weights_config = replace(self.weighting, apply_to="all")  # a sign rule is applied with the advantages
        turns = step_index_from_mask(mask)
        return AgentLoopOutput(
            prompt_ids=ids[: len(ids) - len(response)] if response else ids,
            response_ids=response[: self.response_length],
            response_mask=mask,
            response_logprobs=logprobs[: self.response_length] if logprobs else None,
            reward_score=float(record["reward"]),
            num_turns=2 * episode.steps + 1,
            metrics=metrics,
            extra_fields={RECORD_KEY: record, TURNS_KEY: turns.tolist(),
                          WEIGHTS_KEY: token_weights_for(mask, record, weights_config)},
        )

    async def _failed(self, error: str) -> AgentLoopOutput:
        """A row with no playable task: one masked token, reward 0, the error in the record."""
        prompt_ids = await self.ct_build_initial_tokens([{"role": "user", "content": f"(no task: {error})"}])
        eos = self.tokenizer.eos_token_id
        return AgentLoopOutput(prompt_ids=prompt_ids, response_ids=[eos if eos is not None else 0], response_mask=[0],
                               reward_score=0.0, num_turns=1, metrics={},
                               extra_fields={RECORD_KEY: failed_record(error), TURNS_KEY: [-1], WEIGHTS_KEY: [0.0]})


def apply_seal_weights(data: Any, weighting: Any = None) -> Any:
    """Multiply ``data.batch["advantages"]`` (``[B, T]``, after verl's ``compute_advantage``) by
    SEAL's per-token weights, in place; returns ``data``. Rows without a SEAL record (another
    agent loop) keep their advantages. With ``apply_to`` other than ``"all"``, each row's weights
    are recomputed with the sign of its advantage; otherwise the loop's weights are used."""
    config = _weighting(weighting)
    advantages = data.batch["advantages"]
    records = data.non_tensor_batch.get(RECORD_KEY)
    turns = data.non_tensor_batch.get(TURNS_KEY)
    stored = data.non_tensor_batch.get(WEIGHTS_KEY)
    if records is None:
        return data
    mask = data.batch["response_mask"]
    width = advantages.shape[1]
    table = advantages.new_ones(advantages.shape)
    for b in range(advantages.shape[0]):
        record = records[b]
        if not isinstance(record, Mapping):
            continue
        if config.apply_to == "all" and stored is not None and stored[b] is not None:
            row = list(stored[b])
        else:
            first = int(mask[b].nonzero()[0]) if bool(mask[b].any()) else 0
            row = token_advantage_weights(list(turns[b]), record.get("step_labels") or [], config,
                                          advantage=float(advantages[b, first]),
                                          official_turn_tags=record.get("official_turn_tags")).tolist()
        row = row[:width] + [0.0] * max(0, width - len(row))
        table[b] = advantages.new_tensor(row)
    data.batch["advantages"] = advantages * table
    return data


def install_weighting(weighting: Any = None) -> None:
    """Make verl's ``compute_advantage`` apply SEAL's weights after computing the advantages
    (in ``ray_trainer`` and the v1 trainer's import of it); call it once in the driver process
    before ``trainer.fit()``. Idempotent."""
    import verl.trainer.ppo.ray_trainer as ray_trainer

    original = ray_trainer.compute_advantage
    if getattr(original, "_seal_weighting", False):
        return

    def compute_advantage(data: Any, *args: Any, **kwargs: Any) -> Any:
        return apply_seal_weights(original(data, *args, **kwargs), weighting)

    compute_advantage._seal_weighting = True  # type: ignore[attr-defined]
    ray_trainer.compute_advantage = compute_advantage
    try:
        import verl.trainer.ppo.v1.utils as v1_utils

        v1_utils.compute_advantage = compute_advantage
    except ImportError:  # pragma: no cover - a verl without the v1 trainer
        pass
