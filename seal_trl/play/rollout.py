"""Batched multi-turn rollouts: every episode of a batch advances together, one ``generate`` per turn.

``MultiTurnRollout.run(envs, seeds)`` resets each env with its seed, renders the first messages
through the chat template (with ``tools=info["tools"]``), then per turn makes **one** batched
generate call for all episodes still running, steps every env with its decoded text and appends
the environment's reply (see :class:`seal_trl.play.chat.Transcript`). A generator with
``generate_episodes(keys, sequences, max_new_tokens)`` and ``release(keys)`` (the KV-cached
:class:`seal_trl.play.engine.KVCacheEngine`, which a ``transformers`` model gets) is called with each
episode's key, so it can keep the episode's cache between turns; the rollout releases a key when
its episode ends. Per episode it returns what TRL's ``rollout_func`` contract needs:

* ``prompt_ids``; ``completion_ids`` = the model's tokens and the env's tokens of every turn;
* ``env_mask`` (1 = model token, trained; 0 = env token, masked out of the loss);
* ``step_index`` per completion token: the index of the action (and so of
  ``info["step_labels"]``) that generated it, ``-1`` on env tokens;
* ``logprobs`` of model tokens when the generator gives them (vLLM), 0.0 on env tokens;
* the final ``info`` (``verdict``, ``step_labels``) and the reward.

Budgets: ``max_new_tokens`` per turn and ``max_completion_length`` for the whole completion.
When the budget runs out before the env is done, the episode is ended through
:func:`end_episode`, which runs the env's verifier and diagnoser as its own step-budget
truncation does, so a diagnosis always exists.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .chat import ActionDecoder, Transcript, choose_tools_in_prompt, make_renderer, text_tools_info
from .generate_fn import GenerateFn, Generation, eos_ids, padded_generate_fn

__all__ = ["EpisodeResult", "MultiTurnRollout", "end_episode", "hf_generate_fn"]


@dataclass
class EpisodeResult:
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    step_index: list[int] = field(default_factory=list)
    logprobs: list[float] | None = field(default_factory=list)  # None: the generator gave none
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    num_steps: int = 0
    budget_truncated: bool = False

    @property
    def step_labels(self) -> list[dict[str, Any]]:
        return list(self.info.get("step_labels", []))

    @property
    def passed(self) -> bool:
        return bool(self.info.get("verdict", {}).get("passed", False))


def end_episode(env: Any) -> tuple[float, dict[str, Any]]:
    """End a running episode now (the token budget ran out) and return ``(reward, final info)``:
    the env closes the open turn and still verifies and diagnoses it."""
    return env.unwrapped.force_end()


def hf_generate_fn(model: Any, tokenizer: Any, generation_config: Any = None, *, cache: bool = True,
                   seed: int | None = None) -> GenerateFn:
    """A generate function for a plain ``transformers`` model: the KV-cached engine when it can serve the
    model and the sampling settings (also usable per episode), else :func:`padded_generate_fn`."""
    config = generation_config or model.generation_config
    if cache:
        from .engine import KVCacheEngine, Sampling, engine_unsupported

        if not engine_unsupported(model, config):
            return KVCacheEngine(model, eos_token_ids=sorted(eos_ids(tokenizer, config)),
                                 pad_token_id=tokenizer.pad_token_id, sampling=Sampling.from_config(config), seed=seed)
    return padded_generate_fn(model, tokenizer, generation_config)


@dataclass
class _Episode:
    env: Any
    result: EpisodeResult
    transcript: Transcript
    key: int  # the episode's identity for a keyed (caching) generator
    done: bool = False


class MultiTurnRollout:
    """Play a batch of episodes in lockstep with one batched generate call per turn.

    ``generate`` is a :data:`GenerateFn` or a ``transformers`` model (wrapped with
    :func:`hf_generate_fn`). ``sync_active(local_active) -> bool``, when given, tells whether any
    process still has a running episode; a process whose episodes are all done then keeps calling
    ``generate`` with an empty list, which collective generators (vLLM server mode, FSDP,
    ZeRO-3) need. ``eos_token_ids`` adds end-of-turn ids to the tokenizer's EOS.
    ``tools_in_prompt`` (``auto``, ``always``, ``never``): where the tools go when the chat template
    drops ``tools`` (:func:`~seal_trl.play.chat.choose_tools_in_prompt`, as the HF agent of ``seal eval``
    decides): with ``auto`` such a policy trains with the tools in its system message, not blind.

    ``generate_calls`` counts calls over the object's life; ``last_stats`` describes the last
    :meth:`run`; ``current_envs`` lists the envs a running generate call serves, in prompt order
    (for env-aware scripted policies). A model is served by :func:`hf_generate_fn` (the KV-cached
    engine when it supports the model).
    """

    def __init__(self, tokenizer: Any, generate: GenerateFn | Any, *, max_episode_steps: int = 8,
                 max_new_tokens: int = 128, max_completion_length: int | None = None,
                 chat_template_kwargs: Mapping[str, Any] | None = None,
                 sync_active: Callable[[bool], bool] | None = None,
                 eos_token_ids: Sequence[int] | None = None, tools_in_prompt: str = "auto") -> None:
        if max_episode_steps < 1 or max_new_tokens < 1:
            raise ValueError(f"max_episode_steps and max_new_tokens must be >= 1, got {max_episode_steps} and {max_new_tokens}")
        if max_completion_length is not None and max_completion_length < 1:
            raise ValueError(f"max_completion_length must be >= 1 or None, got {max_completion_length}")
        self.tokenizer = tokenizer
        self.decode = ActionDecoder(tokenizer)
        self.generate = generate if not hasattr(generate, "generate") else hf_generate_fn(generate, tokenizer)
        self.max_episode_steps = max_episode_steps
        self.max_new_tokens = max_new_tokens
        self.max_completion_length = max_completion_length
        self.sync_active = sync_active
        self.eos_ids = set(eos_token_ids or ()) | eos_ids(tokenizer, getattr(generate, "generation_config", None))
        self.renderer = make_renderer(tokenizer, self.eos_ids, chat_template_kwargs)
        self.tools_probe, self.prompt_tools = choose_tools_in_prompt(self.renderer, tools_in_prompt)
        self.keyed = hasattr(self.generate, "generate_episodes") and hasattr(self.generate, "release")
        self._keys = itertools.count()
        self.generate_calls = 0
        self.last_stats: dict[str, float] = {}
        self.current_envs: list[Any] = []  # the envs the running generate call serves, in prompt order

    # -- public ---------------------------------------------------------------------------
    def run(self, envs: Sequence[Any], seeds: Sequence[int | None],
            options: Sequence[Mapping[str, Any] | None] | None = None) -> list[EpisodeResult]:
        """Reset ``envs[i]`` with ``seeds[i]`` (and ``options[i]``) and play all episodes to the end."""
        if len(envs) != len(seeds) or (options is not None and len(options) != len(envs)):
            raise ValueError(f"got {len(envs)} envs, {len(seeds)} seeds and "
                             f"{'no' if options is None else len(options)} options")
        episodes = [self._reset(env, seed, None if options is None else options[i])
                    for i, (env, seed) in enumerate(zip(envs, seeds))]
        calls, with_logprobs = 0, False
        try:
            for _ in range(self.max_episode_steps):
                active = [e for e in episodes if not e.done]
                if not (self.sync_active(bool(active)) if self.sync_active else active):
                    break
                self.current_envs = [e.env for e in active]
                gen = self._generate(active)
                calls += 1
                with_logprobs = with_logprobs or gen.logprobs is not None
                for i, episode in enumerate(active):
                    self._advance(episode, gen.ids[i], gen.logprobs[i] if gen.logprobs is not None else None)
            for episode in episodes:
                if not episode.done:  # turn cap reached before the env's own step budget
                    self._force_end(episode, budget=False)
        finally:  # a generator's caches never outlive the run (the weights change between runs)
            if self.keyed:
                self.generate.release([e.key for e in episodes])
        self._record_stats(episodes, calls)
        if not with_logprobs:
            for episode in episodes:
                episode.result.logprobs = None
        return [e.result for e in episodes]

    # -- steps ----------------------------------------------------------------------------
    def _reset(self, env: Any, seed: int | None, options: Mapping[str, Any] | None) -> _Episode:
        _, info = env.reset(seed=None if seed is None else int(seed), options=dict(options) if options else None)
        seen = text_tools_info(env, info, 0) if self.prompt_tools else info
        transcript = Transcript(self.renderer, seen, self.eos_ids, render_tools=not self.prompt_tools)
        return _Episode(env, EpisodeResult(prompt_ids=transcript.prompt_ids, info=info), transcript, next(self._keys))

    def _generate(self, active: list[_Episode]) -> Generation:
        self.generate_calls += 1
        prompts = [e.result.prompt_ids + e.result.completion_ids for e in active]
        if self.keyed:
            out = self.generate.generate_episodes([e.key for e in active], prompts, self.max_new_tokens)
        else:
            out = self.generate(prompts, self.max_new_tokens)
        gen = out if isinstance(out, Generation) else Generation([list(x) for x in out])
        if len(gen.ids) != len(prompts):
            raise ValueError(f"generate returned {len(gen.ids)} sequences for {len(prompts)} prompts")
        return gen

    def _room(self, episode: _Episode) -> int | None:
        if self.max_completion_length is None:
            return None
        return self.max_completion_length - len(episode.result.completion_ids)

    def _advance(self, episode: _Episode, new_ids: list[int], logprobs: list[float] | None) -> None:
        res = episode.result
        room = self._room(episode)
        ids = new_ids if room is None else new_ids[:room]
        turn = res.num_steps
        self._append(res, ids, model=True, turn=turn, logprobs=logprobs)
        prefix = res.prompt_ids + res.completion_ids[:len(res.completion_ids) - len(ids)] if self.decode.parses else None
        _, reward, terminated, truncated, info = episode.env.step(self.decode(ids, prefix))
        res.num_steps += 1
        res.reward, res.info = float(reward), info
        closing = episode.transcript.closing_ids(ids)
        if terminated or truncated:
            self._finish(episode)
            room = self._room(episode)
            if closing and (room is None or room >= len(closing)):
                self._append(res, closing, model=False)
            return
        seen = text_tools_info(episode.env, info, len(episode.transcript.history)) if self.prompt_tools else info
        reply = closing + episode.transcript.reply_ids(seen)
        room = self._room(episode)
        if room is not None and room < len(reply) + 1:  # no room for the reply and one more token
            self._force_end(episode, budget=True)
            return
        self._append(res, reply, model=False)

    def _finish(self, episode: _Episode) -> None:
        episode.done = True
        if self.keyed:  # free its cache now: the other episodes may run several more turns
            self.generate.release([episode.key])

    def _force_end(self, episode: _Episode, budget: bool) -> None:
        reward, info = end_episode(episode.env)
        episode.result.reward, episode.result.info = float(reward), info
        episode.result.budget_truncated = budget
        self._finish(episode)

    @staticmethod
    def _append(res: EpisodeResult, ids: Sequence[int], model: bool, turn: int = -1,
                logprobs: Sequence[float] | None = None) -> None:
        res.completion_ids.extend(ids)
        res.env_mask.extend([int(model)] * len(ids))
        res.step_index.extend([turn if model else -1] * len(ids))
        lps = list(logprobs[: len(ids)]) if (model and logprobs is not None) else []
        res.logprobs.extend(lps + [0.0] * (len(ids) - len(lps)))

    def _record_stats(self, episodes: Sequence[_Episode], calls: int) -> None:
        n = max(len(episodes), 1)
        self.last_stats = {
            "generate_calls": float(calls),
            "episodes": float(len(episodes)),
            "turns_mean": sum(e.result.num_steps for e in episodes) / n,
            "turns_max": float(max((e.result.num_steps for e in episodes), default=0)),
            "budget_truncated": sum(e.result.budget_truncated for e in episodes) / n,
        }
