"""Per-token log-probabilities with each shared prompt encoded once (the GRPO loss side of issue 12).

TRL's ``GRPOTrainer._get_per_token_logps_and_entropies`` scores a batch laid out as left-padded
prompts followed by right-padded completions, one forward over every row. The episodes of a GRPO
group share their whole prompt (system prompt, tools, first user message: ~530 tokens on the bank
domain, often longer than the completion), so that forward encodes the same prompt G times.
:func:`shared_prefix_logps` finds the rows of a micro-batch with identical prompt tokens (TRL
shuffles and splits the generation batch, so a micro-batch can hold partial groups), encodes
their prompt once (batch 1, through the backbone, keeping its KV cache), expands the keys/values
to the rows without copying, and runs only ``last prompt token + completion`` on top through the
model's own (TRL-patched) forward with ``fused_lm_head=True``. The log-probabilities and
entropies therefore come out of TRL's own fused head (temperature, soft-capping, logit scale
included), and gradients flow back through the expansion into the single prefix forward.

Positions mimic TRL's layout exactly: a row whose prompt has ``k`` left pads gets positions
``k, k+1, ...`` (what the model's default ``arange`` gives the padded row), so the result is the
same computation up to floating-point summation order (tested to 1e-5 against TRL's own method).

Rows that share a prompt with no other row, or whose prompt is a single token or not left-padded
contiguously, go through TRL's own method in one call. :func:`unsupported` says when the whole
path must not be used (the trainer then calls TRL's method unchanged).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import torch

__all__ = ["shared_prefix_logps", "unsupported", "backbone_cache_arg", "VISION_KEYS"]

# Keyword arguments of ``_get_per_token_logps_and_entropies`` that carry images or per-token
# type ids: the prompt is then not text alone, and its rows cannot be split off as a prefix.
VISION_KEYS = ("pixel_values", "image_grid_thw", "num_images", "pixel_attention_mask", "spatial_shapes",
               "num_tiles", "image_sizes", "token_type_ids", "mm_token_type_ids", "image_position_ids")


def _causal_lm(model: Any) -> Any:
    """The module TRL patched with the fused head (the PEFT base model, else the model itself)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def backbone_cache_arg(causal_lm: Any) -> str | None:
    """The backbone's keyword for a KV cache (``cache`` in transformers 5.25, ``past_key_values``
    before), or ``None`` when its forward takes neither or no ``position_ids``."""
    backbone = getattr(causal_lm, "base_model", None)
    if backbone is None or backbone is causal_lm:
        return None
    try:
        params = inspect.signature(backbone.forward).parameters
    except (TypeError, ValueError):
        return None
    if "position_ids" not in params:
        return None
    return next((name for name in ("cache", "past_key_values") if name in params), None)


def unsupported(model: Any, *, num_processes: int = 1) -> list[str]:
    """Why the shared-prefix path cannot serve ``model`` (empty: it can). Checked per call, since
    TRL may wrap the model or enable activation checkpointing after the trainer is built.

    * more than one process: the prefix runs through the unwrapped backbone, outside DDP's forward,
      and two forwards before one backward have not been verified under DDP/FSDP/ZeRO;
    * PEFT: the adapter switching TRL does for the reference model (``use_adapter``) is untested here;
    * caches other than full-attention ``DynamicLayer``s (sliding windows, linear attention): the
      expanded prefix cache would not be what the full forward sees;
    * activation checkpointing while gradients are on: transformers then drops the cache in every
      layer (``GradientCheckpointingLayer``), which would silently score completions without their prompt;
    * a backbone whose forward takes no cache or ``position_ids``, or a model TRL did not patch.
    """
    from ..play.engine import engine_unsupported

    reasons = []
    if num_processes > 1:
        reasons.append(f"{num_processes} processes")
    if hasattr(model, "get_base_model") or hasattr(model, "peft_config"):
        reasons.append("PEFT model")
    causal_lm = _causal_lm(model)
    if getattr(causal_lm, "config", None) is None:
        return reasons + ["not a transformers model"]
    reasons += engine_unsupported(causal_lm)
    if backbone_cache_arg(causal_lm) is None:
        reasons.append("backbone forward takes no cache or position_ids")
    if not _has_fused_head(causal_lm):
        reasons.append("no TRL fused LM head on the model")
    if torch.is_grad_enabled() and causal_lm.training and any(
            getattr(m, "gradient_checkpointing", False) for m in causal_lm.modules()):
        reasons.append("activation checkpointing (drops the cache)")
    return reasons


def _has_fused_head(causal_lm: Any) -> bool:
    """Whether TRL's ``add_fused_lm_head`` patched ``causal_lm`` (it keeps the original signature
    through ``functools.wraps``, so the patched function is recognised by its code object)."""
    func = getattr(causal_lm.forward, "__func__", causal_lm.forward)
    return getattr(getattr(func, "__code__", None), "co_name", "") == "_fused_forward"


def _prompt_groups(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor) -> tuple[list[list[int]], list[int]]:
    """``(groups, singles)``: row indices of rows sharing their (unpadded) prompt, at least two per
    group and a prompt of at least two tokens; every other row is a single, scored by TRL's path."""
    by_prompt: dict[tuple[int, ...], list[int]] = {}
    singles = []
    width = prompt_ids.size(1)
    lengths = prompt_mask.sum(1).tolist()
    for r, n in enumerate(lengths):
        n = int(n)
        # Left padding only: zeros then ones (anything else is scored by TRL's path as is).
        if n < 2 or not bool(prompt_mask[r, width - n:].all()):
            singles.append(r)
            continue
        by_prompt.setdefault(tuple(prompt_ids[r, width - n:].tolist()), []).append(r)
    groups = []
    for rows in by_prompt.values():
        (groups if len(rows) > 1 else singles).append(rows if len(rows) > 1 else rows[0])
    return groups, sorted(singles)


def _expanded_cache(kv: list[tuple[torch.Tensor, torch.Tensor]], n: int) -> Any:
    """A ``DynamicCache`` over the prefix keys/values expanded (views, no copy) to ``n`` rows."""
    from ..play.engine import _layers

    return _layers([(k.expand(n, -1, -1, -1), v.expand(n, -1, -1, -1)) for k, v in kv])


def shared_prefix_logps(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                        *, compute_entropy: bool, plain: Callable[..., tuple[Any, Any, Any]],
                        autocast: Callable[[], Any], stats: dict[str, int] | None = None,
                        ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``(logps [B, C], entropies [B, C] or None)`` for one micro-batch, as TRL's method returns them.

    ``plain(input_ids, attention_mask)`` is TRL's own method on a subset of rows (returning
    ``(logps, entropies, aux)``); ``autocast`` is the accelerator's autocast context. ``stats``
    counts ``shared_rows``, ``plain_rows`` and ``prefix_tokens_saved`` (prompt tokens not re-encoded).
    """
    causal_lm = _causal_lm(model)
    cache_arg = backbone_cache_arg(causal_lm)
    batch, width = input_ids.shape
    prompt_width = width - logits_to_keep
    groups, singles = _prompt_groups(input_ids[:, :prompt_width], attention_mask[:, :prompt_width])
    parts: list[tuple[list[int], torch.Tensor, torch.Tensor | None]] = []
    for rows in groups:
        n = len(rows)
        index = torch.tensor(rows, device=input_ids.device)
        plen = int(attention_mask[rows[0], :prompt_width].sum())
        pad = prompt_width - plen
        prefix = input_ids[rows[0]:rows[0] + 1, pad:prompt_width - 1]
        with autocast():
            head = causal_lm.base_model(input_ids=prefix, use_cache=True,
                                        position_ids=torch.arange(pad, prompt_width - 1, device=prefix.device)[None])
        cache = getattr(head, cache_arg)
        kv = [(layer.keys, layer.values) for layer in cache.layers]
        suffix = input_ids.index_select(0, index)[:, prompt_width - 1:]
        suffix_mask = attention_mask.index_select(0, index)[:, prompt_width - 1:]
        mask = torch.cat([suffix_mask.new_ones(n, plen - 1), suffix_mask], dim=1)
        positions = torch.arange(prompt_width - 1, width, device=suffix.device)[None].expand(n, -1)
        labels = suffix.masked_fill(suffix_mask == 0, -100)
        labels[:, 0] = -100
        with autocast():
            out = model(input_ids=suffix, attention_mask=mask, position_ids=positions, labels=labels,
                        fused_lm_head=True, **{cache_arg: _expanded_cache(kv, n)})
        parts.append((rows, out.log_probs[:, -logits_to_keep:],
                      out.entropy[:, -logits_to_keep:] if compute_entropy else None))
        if stats is not None:
            stats["shared_rows"] += n
            stats["prefix_tokens_saved"] += (n - 1) * (plen - 1) + n * pad
    if singles:
        index = torch.tensor(singles, device=input_ids.device)
        logps, entropies, _ = plain(input_ids.index_select(0, index), attention_mask.index_select(0, index))
        parts.append((singles, logps, entropies if compute_entropy else None))
        if stats is not None:
            stats["plain_rows"] += len(singles)
    order = torch.tensor([r for rows, _, _ in parts for r in rows], device=input_ids.device)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(batch, device=order.device)
    logps = torch.cat([lp for _, lp, _ in parts], dim=0).index_select(0, inverse)
    entropies = (torch.cat([e for _, _, e in parts], dim=0).index_select(0, inverse) if compute_entropy else None)
    return logps, entropies
