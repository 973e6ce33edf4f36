"""SEAL environments as an OpenRLHF agent (OpenRLHF 0.11: ``openrlhf.utils.agent``).

OpenRLHF loads a Python file given by ``--train.agent_func_path`` and instantiates its
``AgentExecutor``; a two-line file is enough::

    # seal_agent.py
    from seal_envs.integrations.openrlhf import AgentExecutor  # noqa: F401

Each prompt of the dataset is one episode. The task comes from the row's label
(``--data.label_key``): a task id (``bank/train/d2/5``), a seed (``"17"``), or a JSON object with
any of ``task_id``, ``seed``, ``index``, ``env_id``, ``split``, ``domain``, ``difficulty``. The
dataset's prompt text is replaced by the env's opening messages rendered with the policy's chat
template (tools included), and each step's environment feedback is the env's reply rendered the
same way, ending with the next generation prompt: OpenRLHF appends it to the token stream as is.

What reaches OpenRLHF: the episode reward (``rewards``/``scores``), and in ``extra_logs`` (which
OpenRLHF logs as scalars) ``seal_passed``, ``seal_progress``, ``seal_steps`` and
``seal_format_errors``. The executor's response dict also carries ``seal`` (the final record) and
``seal_token_weights`` (SEAL's per-token weights over ``observation_tokens``, 0 outside the
action ranges); OpenRLHF 0.11's ``_process_response_into_experience`` keeps neither, so using the
weights in its loss means reading them there (docs/frameworks-28b.md).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
from openrlhf.utils.agent import AgentInstanceBase, MultiTurnAgentExecutor

from seal_envs.integrations.episode import DEFAULT_ENV_ID, RowError, TextEpisode, failed_record, token_weights_for

__all__ = ["AgentExecutor", "SealAgentInstance", "configure", "parse_label"]

# Set per episode by the executor (contextvars follow each asyncio task, so concurrent episodes
# keep theirs): the policy's tokenizer, and where the instance leaves its episode for the executor.
_TOKENIZER: contextvars.ContextVar[Any] = contextvars.ContextVar("seal_openrlhf_tokenizer")
_SLOT: contextvars.ContextVar[dict] = contextvars.ContextVar("seal_openrlhf_slot")
SETTINGS: dict[str, Any] = {"env_id": DEFAULT_ENV_ID, "env_kwargs": {}, "channel": None, "weighting": None}


def configure(*, env_id: str | None = None, env_kwargs: Mapping[str, Any] | None = None, surface_channel: Any = None,
              weighting: Any = None) -> None:
    """Settings of every episode this process plays (OpenRLHF builds the executor with no
    arguments, so the agent file calls this): the id for labels that name none, ``gym.make``
    kwargs, a ``SurfaceChannel`` (or its path) whose newest surface training envs show, and the
    :class:`~seal_envs.core.weighting.WeightingConfig` (or its fields) of the token weights."""
    if env_id is not None:
        SETTINGS["env_id"] = env_id
    if env_kwargs is not None:
        SETTINGS["env_kwargs"] = dict(env_kwargs)
    if surface_channel is not None:
        if not hasattr(surface_channel, "latest"):
            from seal_envs.integrations.channel import SurfaceChannel  # issue 28a's cross-process channel

            surface_channel = SurfaceChannel(surface_channel)
        SETTINGS["channel"] = surface_channel
    if weighting is not None:
        SETTINGS["weighting"] = weighting


def parse_label(label: Any) -> dict[str, Any]:
    """The dataset row a label stands for: a JSON object, a seed, or a task id."""
    if isinstance(label, Mapping):
        return dict(label)
    if not isinstance(label, str) or not label.strip():
        raise RowError(f"the label must name a task (a task id, a seed or a JSON object), got {label!r}")
    text = label.strip()
    if text.startswith("{"):
        try:
            row = json.loads(text)
        except json.JSONDecodeError as e:
            raise RowError(f"the label is not valid JSON: {e}") from None
        if not isinstance(row, dict):
            raise RowError(f"the label's JSON must be an object, got {type(row).__name__}")
        return row
    return {"seed": int(text)} if text.isdigit() else {"task_id": text}


def _render(tokenizer: Any, messages: list, tools: list, generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False,
                                         add_generation_prompt=generation_prompt)


class SealAgentInstance(AgentInstanceBase):
    """One episode: ``reset`` opens it from the label, ``step`` plays the model's text."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.episode: TextEpisode | None = None
        self.error: str | None = None
        self.tokenizer = _TOKENIZER.get(None)
        slot = _SLOT.get(None)
        if slot is not None:
            slot["instance"] = self

    async def reset(self, states: dict, **kwargs: Any) -> dict:
        try:
            self.episode = TextEpisode.from_row(parse_label(states.get("label")), channel=SETTINGS["channel"],
                                                default_env_id=SETTINGS["env_id"], **SETTINGS["env_kwargs"])
        except RowError as e:
            self.error = str(e)
            return {"observation": f"(no task: {self.error})"}
        if self.tokenizer is None:
            return {"observation": "\n".join(f"[{m['role']}] {m['content']}" for m in self.episode.messages)}
        return {"observation": _render(self.tokenizer, self.episode.messages, self.episode.tools, True)}

    def _feedback(self, seen: int) -> str:
        """The env's reply after the assistant message, rendered and ending with the next
        generation prompt; the assistant's own end token is part of its generated tokens."""
        ep = self.episode
        if self.tokenizer is None:
            return "".join(f"\n[{m['role']}] {m['content']}" for m in ep.messages[seen + 1:])
        base = _render(self.tokenizer, ep.messages[: seen + 1], ep.tools, False)
        full = _render(self.tokenizer, ep.messages, ep.tools, True)
        eos = getattr(self.tokenizer, "eos_token", None)
        if eos and eos in base and not base[base.rfind(eos) + len(eos):].strip():
            base = base[: base.rfind(eos) + len(eos)]  # the model generated up to and including its end token
        if full.startswith(base):
            return full[len(base):]
        raise ValueError("the chat template renders an assistant message differently when messages follow it; "
                         "use a prefix-stable template")

    async def step(self, states: dict, **kwargs: Any) -> dict:
        if self.episode is None or self.episode.done:
            return self._result("", done=True)
        seen = len(self.episode.messages)
        self.episode.step(str(states.get("action_text") or ""))
        if self.episode.done:
            return self._result("", done=True)
        return self._result(self._feedback(seen), done=False)

    def record(self) -> dict[str, Any]:
        if self.episode is None:
            return failed_record(self.error or "the episode never started")
        return self.episode.finish()

    def _result(self, feedback: str, done: bool) -> dict:
        reward = self.record()["reward"] if done else 0.0
        return {"rewards": np.float64(reward), "scores": np.float64(reward), "environment_feedback": feedback,
                "done": done, "extra_logs": self.scalars() if done else {}}

    def scalars(self) -> dict[str, float]:
        record = self.record()
        labels = [lb.get("label") for lb in record.get("step_labels") or []]
        return {"seal_passed": float(bool((record.get("verdict") or {}).get("passed"))),
                "seal_progress": float(record.get("official_progress") or 0.0),
                "seal_steps": float(record.get("steps", 0)),
                "seal_format_errors": float(labels.count("format_error"))}

    def close(self) -> None:
        if self.episode is not None:
            self.episode.close()


class AgentExecutor(MultiTurnAgentExecutor):
    """OpenRLHF's multi-turn executor over :class:`SealAgentInstance`; adds the final record and
    SEAL's per-token weights to the response dict. An episode whose token budget runs out is
    verified as the env's step budget would verify it."""

    def __init__(self) -> None:
        super().__init__(SealAgentInstance)

    async def execute(self, prompt, label, sampling_params, max_length: int, hf_tokenizer, llm_engine, images=None):
        _TOKENIZER.set(hf_tokenizer)
        slot: dict[str, Any] = {}
        _SLOT.set(slot)
        try:
            response = await super().execute(prompt, label, sampling_params, max_length, hf_tokenizer, llm_engine,
                                             images)
            instance: SealAgentInstance = slot["instance"]
            record = instance.record()
            turns = [-1] * len(response["observation_tokens"])
            for k, (start, end) in enumerate(response["action_ranges"]):  # one range per env step
                turns[start:end] = [k] * (end - start)
            response["seal"] = record
            response["seal_token_weights"] = token_weights_for(None, record, SETTINGS["weighting"], turns=turns)
            response["reward"] = response["scores"] = float(record["reward"])
            response["extra_logs"] = instance.scalars()
            return response
        finally:
            if "instance" in slot:
                slot["instance"].close()
