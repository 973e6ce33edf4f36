"""Generate functions bound to a ``GRPOTrainer``: its policy, sampling settings and backend.

:func:`trainer_generate_fn` returns a :data:`~seal_trl.play.generate_fn.GenerateFn` that samples exactly
as the trainer's own single-turn path does (``trainer.generation_config``: temperature, top-p,
top-k, ...), through ``unwrap_model_for_generation`` (DDP, DeepSpeed, FSDP), or through TRL's
``VLLMGeneration`` when ``use_vllm`` is on. Only the per-turn ``max_new_tokens`` differs.

Without vLLM the policy is served by :class:`~seal_trl.play.engine.KVCacheEngine` (each episode's KV
cache kept across turns; the rollout calls it per episode), unless the backend is collective
(below: the engine's per-episode forwards differ in number between processes) or the sampling
settings include one the engine does not implement; then ``model.generate`` on left-padded
prompts, as before.

Collective backends (vLLM server mode, DeepSpeed ZeRO-3, FSDP) need every process to join every
call with the same number of prompts; :func:`needs_lockstep` tells when, and the functions below
pad a process's prompt list with a one-token dummy prompt whose output is dropped.
The vLLM path follows TRL 1.16's ``VLLMGeneration.generate`` API; it is not exercised by the
CPU test suite.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from .generate_fn import Generation, GenerateFn, cut_at_eos, left_pad

__all__ = ["needs_lockstep", "sync_active_fn", "trainer_generate_fn"]


def needs_lockstep(trainer: Any) -> bool:
    """Whether generate calls are collective across processes."""
    if trainer.accelerator.num_processes <= 1:
        return False
    dist = getattr(trainer, "_dist", None)
    collective_model = bool(dist is not None and (dist.is_zero3 or dist.is_fsdp))
    vllm_server = bool(trainer.use_vllm and getattr(trainer.args, "vllm_mode", "") == "server")
    return collective_model or vllm_server


def sync_active_fn(trainer: Any):
    """``sync_active(local) -> any process active`` for lockstep backends, else ``None``."""
    if not needs_lockstep(trainer):
        return None
    import torch

    def sync_active(local: bool) -> bool:
        flag = torch.tensor([int(local)], device=trainer.accelerator.device)
        return bool(trainer.accelerator.reduce(flag, reduction="sum").item() > 0)

    return sync_active


def _padded(trainer: Any, prompts: list[list[int]]) -> tuple[list[list[int]], int]:
    """Pad ``prompts`` to the largest count over processes (lockstep backends only)."""
    if not needs_lockstep(trainer):
        return prompts, len(prompts)
    from accelerate.utils import gather_object

    most = max(gather_object([len(prompts)]))
    dummy = [trainer._tokenizer.eos_token_id]
    return prompts + [dummy] * (most - len(prompts)), len(prompts)


def trainer_generate_fn(trainer: Any) -> GenerateFn:
    """The trainer's policy as a :data:`~seal_trl.play.generate_fn.GenerateFn`."""
    return _vllm_generate_fn(trainer) if trainer.use_vllm else _hf_generate_fn(trainer)


def _hf_generate_fn(trainer: Any) -> GenerateFn:
    return _TrainerHFGenerate(trainer)


class _TrainerHFGenerate:
    """The trainer's policy for the HF path: a :data:`GenerateFn` that is also keyed per episode."""

    def __init__(self, trainer: Any) -> None:
        from .engine import KVCacheEngine, Sampling, engine_unsupported

        self.trainer = trainer
        self.eos = set(trainer.eos_token_ids)
        why = engine_unsupported(trainer.accelerator.unwrap_model(trainer.model_wrapped), trainer.generation_config)
        if needs_lockstep(trainer):
            why.append("collective backend")
        self.why_uncached = why
        # seed=None: sampling draws from the global RNG, which the trainer seeds (reproducible runs as before)
        self.engine = None if why else KVCacheEngine(
            trainer.model, eos_token_ids=sorted(self.eos), pad_token_id=trainer._tokenizer.pad_token_id,
            sampling=Sampling.from_config(trainer.generation_config))

    def generate_episodes(self, keys: list[Any], prompts: list[list[int]], max_new_tokens: int) -> Generation:
        if self.engine is None:
            return self(prompts, max_new_tokens)
        if not prompts:
            return Generation([])
        with self._model() as model:
            self.engine.model = model
            return self.engine.generate_episodes(keys, prompts, max_new_tokens)

    def release(self, keys: list[Any]) -> None:
        if self.engine is not None:
            self.engine.release(keys)

    def __call__(self, prompts: list[list[int]], max_new_tokens: int) -> Generation:
        if self.engine is not None:
            if not prompts:
                return Generation([])
            with self._model() as model:
                self.engine.model = model
                return self.engine(prompts, max_new_tokens)
        prompts, keep = _padded(self.trainer, prompts)
        if not prompts:
            return Generation([])
        config = copy.deepcopy(self.trainer.generation_config)
        config.max_new_tokens = max_new_tokens
        ids, mask = left_pad(prompts, self.trainer._tokenizer.pad_token_id)
        device = self.trainer.accelerator.device
        with self._model() as model:
            out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), generation_config=config)
        rows = out[:, ids.size(1):].tolist()[:keep]
        return Generation([cut_at_eos(row, self.eos) for row in rows])

    @contextlib.contextmanager
    def _model(self):
        import torch
        from trl.models import unwrap_model_for_generation

        trainer = self.trainer
        with (
            unwrap_model_for_generation(
                trainer.model_wrapped, trainer.accelerator,
                gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                generation_kwargs=trainer.generation_kwargs,
                gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
            ) as model,
            torch.no_grad(),
            trainer._dist.summon_full_params(trainer.model_wrapped, recurse=False),
        ):
            yield model


def _vllm_generate_fn(trainer: Any) -> GenerateFn:
    vllm = trainer.vllm_generation
    eos = set(trainer.eos_token_ids)

    def generate(prompts: list[list[int]], max_new_tokens: int) -> Generation:
        prompts, keep = _padded(trainer, prompts)
        saved = vllm.max_completion_length
        vllm.max_completion_length = max_new_tokens  # the per-turn budget; restored below
        try:
            _, ids, logprobs, _ = vllm.generate(prompts=prompts, images=None, num_generations=1)
        finally:
            vllm.max_completion_length = saved
        ids, logprobs = ids[:keep], logprobs[:keep] if logprobs is not None else None
        cut = [cut_at_eos(row, eos) for row in ids]
        top1 = None if logprobs is None else [[lp[0] for lp in seq][: len(c)] for seq, c in zip(logprobs, cut)]
        return Generation(cut, top1)

    return generate
