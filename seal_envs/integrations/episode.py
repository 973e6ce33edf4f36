"""One SEAL episode driven one generation at a time, for framework loops that own the model call
(verl's agent loop, OpenRLHF's agent instance, a verifiers Env).

Why a class of its own: those loops hold the conversation as chat messages and token ids, call
the model themselves and hand the env one text action per turn. :class:`TextEpisode` gives them
exactly that: the opening messages and tools at :meth:`~TextEpisode.reset`, the messages the env
appends after each action, the final record at the end, and the newest co-evolved surface at
every reset of a training env. Whatever the model writes is a labelled turn (the env's own
contract); a row that names no playable task is a :class:`RowError` the adapter turns into a
failed, labelled episode, never an exception into the framework's loop.

The row and record helpers here (:func:`env_and_reset_arguments`, :func:`final_record`) follow the
contract of ``seal_envs.integrations.common`` (issue 28a) key for key; info keys are read here
and nowhere else in these adapters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from seal_envs.core.surface import CANONICAL
from seal_envs.integrations.common import RECORD_KEYS, RowError, final_record, reset_arguments, row_value

__all__ = ["DEFAULT_ENV_ID", "RECORD_KEYS", "RowError", "TextEpisode", "failed_record", "final_record",
           "env_and_reset_arguments", "token_weights_for"]

DEFAULT_ENV_ID = "seal/ToolUse-v0"


def env_and_reset_arguments(row: Mapping[str, Any] | None, default_env_id: str = DEFAULT_ENV_ID
                             ) -> tuple[str, int | None, dict[str, Any]]:
    """``(env_id, seed, options)`` from a framework's dataset row: the row's ``env_id`` (at the top
    or nested, as every key :func:`~seal_envs.integrations.common.reset_arguments` reads) and that
    function's seed and options. A field of the wrong type is a :class:`RowError` naming it."""
    env_id = (row_value(row, "env_id") if isinstance(row, Mapping) else None) or default_env_id
    if not isinstance(env_id, str) or not env_id.startswith("seal/"):
        raise RowError(f"dataset row field 'env_id' must be a seal/ environment id, got {env_id!r}")
    seed, options = reset_arguments(row)
    return env_id, seed, options


def token_weights_for(mask: Sequence[int] | None, record: Mapping[str, Any], config: Any = None,
                      advantage: float | None = None, *, turns: Sequence[int] | None = None) -> list[float]:
    """SEAL's per-token advantage weights for a response from a :func:`final_record`: ``turns``
    is each token's turn (-1: not the model's), or ``mask`` marks the model's tokens with one run
    of 1s per env step (a step that generated nothing would shift the runs: pass ``turns`` where
    the spans are known). ``config``: a :class:`~seal_envs.core.weighting.WeightingConfig` or a
    mapping of its fields (default: the official trajectory scale)."""
    from seal_envs.core.weighting import WeightingConfig, token_advantage_weights, step_index_from_mask

    if not isinstance(config, WeightingConfig):
        config = WeightingConfig.from_dict(config)
    index = step_index_from_mask(mask or []) if turns is None else turns
    weights = token_advantage_weights(index, record.get("step_labels") or [], config,
                                      advantage=advantage, official_turn_tags=record.get("official_turn_tags"))
    return [float(w) for w in weights]


def _tools_note(tools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    lines = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    return {"role": "system", "content": f"The available tools changed. Tools now:\n{lines}"}


class TextEpisode:
    """A SEAL env behind text in, messages out.

    ``channel``: any object with ``latest() -> Surface`` (``SurfaceChannel``); a training env
    shows its newest surface from every reset on, an evaluation env keeps its canonical one.
    ``env_kwargs`` go to ``gym.make`` (``max_steps``, ``call_format``, ``split``, ...).
    """

    def __init__(self, env_id: str = DEFAULT_ENV_ID, *, channel: Any = None, **env_kwargs: Any) -> None:
        import gymnasium as gym

        import seal_envs  # noqa: F401  (registers the ids)

        try:
            self.env = gym.make(env_id, disable_env_checker=True, **env_kwargs)
        except Exception as e:  # noqa: BLE001 - an unknown id or bad kwargs come from the row or config
            raise RowError(f"cannot make {env_id!r}: {type(e).__name__}: {e}") from None
        self.channel = channel
        self.messages: list[dict[str, Any]] = []  # the conversation as a chat template renders it
        self.tools: list[dict[str, Any]] = []  # the tool list of the first prompt
        self.info: dict[str, Any] = {}
        self.reward = 0.0
        self.done = False
        self.steps = 0
        self._shown_tools: list[dict[str, Any]] = []

    @classmethod
    def from_row(cls, row: Mapping[str, Any] | None, *, channel: Any = None, default_env_id: str = DEFAULT_ENV_ID,
                 **env_kwargs: Any) -> TextEpisode:
        """The episode a dataset row asks for, reset; a row that names no playable task is a
        :class:`RowError`."""
        env_id, seed, options = env_and_reset_arguments(row, default_env_id)
        episode = cls(env_id, channel=channel, **env_kwargs)
        try:
            episode.reset(seed=seed, options=options)
        except RowError:
            episode.close()
            raise
        return episode

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> list[dict[str, Any]]:
        """Start the episode; the opening messages (system, first user request). Tools: :attr:`tools`.

        The channel's surface is shown only when the env is a training env and the task is a
        training task: a row that asks a training env for a test or ood task is evaluated on the
        canonical surface, as an evaluation env would show it."""
        base = self.env.unwrapped
        try:
            _, info = self.env.reset(seed=seed, options=options)
            if self.channel is not None and not base.surface.frozen:
                surface = self.channel.latest() if base.task.split == "train" else None
                surface = surface if surface is not None else CANONICAL
                if surface != base.surface:  # show it from the first message on: the same task again
                    base.set_surface(surface)
                    _, info = self.env.reset(seed=seed, options={"task": base.task})
        except (KeyError, ValueError, IndexError, TypeError) as e:  # an unknown task id, an index past the split
            raise RowError(f"no task for seed={seed!r} options={options!r}: {type(e).__name__}: {e}") from None
        self.info = info
        self.messages = [dict(m) for m in info["new_messages"]]
        self.tools = list(info.get("tools") or [])
        self._shown_tools = self.tools
        self.reward, self.done, self.steps = 0.0, False, 0
        return list(self.messages)

    def step(self, action: Any) -> list[dict[str, Any]]:
        """Play one action (the model's text, or any shape ``env.step`` reads); the messages the
        env appended after it (empty when the episode ended). Malformed actions are labelled
        turns; a step after the end is refused with a ``RuntimeError`` (an adapter bug)."""
        if self.done:
            raise RuntimeError("the episode has ended; read record()")
        _, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        self.info, self.reward = info, float(reward)
        assistant, *new = info["new_messages"]
        self.messages.append(dict(assistant))
        self.done = bool(terminated or truncated)
        if self.done:
            return []
        tools = list(info["tools"]) if "tools" in info else self._shown_tools  # sent when it changed
        if tools != self._shown_tools:  # a later user turn brings tools: tell the model in-band
            new.insert(0, _tools_note(tools))
            self._shown_tools = tools
        self.messages.extend(new)
        return new

    def finish(self) -> dict[str, Any]:
        """End the episode now if the framework's budget ran out first (it is still verified and
        diagnosed, as the env's own step budget would), and return :meth:`record`."""
        if not self.done:
            self.reward, extra = self.env.unwrapped.force_end()
            self.info = {**self.info, **extra}
            self.done = True
        return self.record()

    @property
    def labels(self) -> list[dict[str, Any]]:
        return list(self.info.get("step_labels") or [])

    def record(self) -> dict[str, Any]:
        """:func:`final_record` of the finished episode, with the number of actions played."""
        return final_record(self.info, self.reward) | {"steps": self.steps}

    def close(self) -> None:
        self.env.close()


def failed_record(error: str) -> dict[str, Any]:
    """The record of a row that could not start an episode: reward 0 and the error, so the
    trajectory is kept and the cause is visible in the framework's logs. It has no
    ``verdict``: the co-evolution owner counts only records that have one."""
    return {"reward": 0.0, "row_error": error, "step_labels": [], "official_turn_tags": [], "steps": 0}
