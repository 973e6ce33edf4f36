"""The contract between a rollout and whatever samples its tokens: a generate function.

``generate(prompt_ids, max_new_tokens) -> Generation`` is all :class:`~seal_trl.play.rollout.MultiTurnRollout`
asks of a policy, so a scripted agent in a test, a ``transformers`` model, the KV-cached engine
(:mod:`seal_trl.play.engine`), TRL's vLLM path (:mod:`seal_trl.play.generation`) and an inference server all
plug in the same way. This module holds the contract and the plain ``model.generate`` function the
engine is tested against; it imports none of its users, so none of them import each other through it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Generation", "GenerateFn", "cut_at_eos", "eos_ids", "left_pad", "padded_generate_fn"]


@dataclass
class Generation:
    """What a generate function returns: new token ids per prompt (and their logprobs, if known)."""

    ids: list[list[int]]
    logprobs: list[list[float]] | None = None


#: ``generate(prompt_ids, max_new_tokens) -> Generation`` (a plain list of id lists is accepted too).
GenerateFn = Callable[[list[list[int]], int], "Generation | list[list[int]]"]


def padded_generate_fn(model: Any, tokenizer: Any, generation_config: Any = None) -> GenerateFn:
    """``model.generate`` on the left-padded prompts, no cache kept: the reference the engine is tested against."""
    import torch

    eos = eos_ids(tokenizer, generation_config or model.generation_config)

    def generate(prompts: list[list[int]], max_new_tokens: int) -> Generation:
        config = copy.deepcopy(generation_config or model.generation_config)
        config.max_new_tokens = max_new_tokens
        ids, mask = left_pad(prompts, tokenizer.pad_token_id)
        with torch.no_grad():
            out = model.generate(input_ids=ids.to(model.device), attention_mask=mask.to(model.device),
                                 generation_config=config)
        return Generation([cut_at_eos(row, eos) for row in out[:, ids.size(1):].tolist()])

    return generate


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any]:
    import torch

    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad_id] * (width - len(p)) + list(p) for p in prompts], dtype=torch.long)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long)
    return ids, mask


def cut_at_eos(row: Sequence[int], eos: set[int]) -> list[int]:
    for i, tok in enumerate(row):
        if tok in eos:
            return list(row[: i + 1])
    return list(row)


def eos_ids(tokenizer: Any, generation_config: Any = None) -> set[int]:
    ids = {tokenizer.eos_token_id}
    extra = getattr(generation_config, "eos_token_id", None)
    ids.update(extra if isinstance(extra, (list, tuple)) else [extra])
    return {i for i in ids if i is not None}
