"""Generation for ``transformers`` models that never re-reads what it has already read.

Why: a multi-turn episode grows by a short env reply per turn, yet ``model.generate`` on the whole
conversation re-encodes every earlier token each turn, and a left-padded batch adds padding up to
the longest episode. On the tiny model that made the batched rollout slower than one episode at a
time (docs/benchmarks.md). :class:`KVCacheEngine` keeps per episode:

* **its KV cache across turns.** A call gives the *full* token sequence of each episode; the
  engine compares it with the tokens it holds and reuses only their longest common prefix. A
  template that re-renders earlier turns (a sequence that is not an extension of the cache) so
  costs a re-prefill from the first differing token, never a wrong cache (``stats["resyncs"]``).
* **a shared prefix.** New episodes of a call are sorted and split like a radix tree: a run of
  sequences that share at least ``min_shared`` more tokens is encoded once (the system prompt and
  tools; a GRPO group's whole prompt) and the rest of each sequence extends that cache.
* **one batch for decoding.** Each episode's new tokens are prefilled alone (no padding); then
  the ragged caches are stacked left-padded into a buffer preallocated for the whole call, with
  an attention mask and explicit ``position_ids``, and every step decodes all running episodes
  in one forward that writes its column in place (``DynamicLayer`` would copy the whole batch
  cache on every step). Finished rows are dropped once they are half the batch.

An episode's cache is freed by :meth:`KVCacheEngine.release` (the rollout calls it when the
episode ends). Models whose caches are not plain full-attention layers (sliding windows, linear
attention) and sampling settings beyond temperature/top-k/top-p/min-p are refused by
:func:`engine_unsupported`, and callers fall back to the uncached path.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from .generate_fn import Generation

__all__ = ["KVCacheEngine", "Sampling", "engine_unsupported"]

# GenerationConfig settings the engine does not implement, with their neutral values: any other value
# (and not the library default either) means "fall back".
_UNSUPPORTED = {"repetition_penalty": 1.0, "num_beams": 1, "no_repeat_ngram_size": 0, "bad_words_ids": None,
                "suppress_tokens": None, "begin_suppress_tokens": None, "sequence_bias": None, "typical_p": 1.0,
                "epsilon_cutoff": 0.0, "eta_cutoff": 0.0, "min_new_tokens": 0, "encoder_repetition_penalty": 1.0,
                "forced_bos_token_id": None, "forced_eos_token_id": None, "guidance_scale": 1.0, "top_h": None,
                "assistant_model": None, "prompt_lookup_num_tokens": None}


@dataclass(frozen=True)
class Sampling:
    """The sampling settings the engine implements, in the order transformers applies them."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float | None = None

    @property
    def greedy(self) -> bool:
        return not self.do_sample or self.temperature == 0

    @classmethod
    def from_config(cls, config: Any) -> Sampling:
        return cls(do_sample=bool(config.do_sample), temperature=float(config.temperature or 1.0),
                   top_k=int(config.top_k or 0), top_p=float(1.0 if config.top_p is None else config.top_p),
                   min_p=config.min_p)


def engine_unsupported(model: Any, generation_config: Any = None) -> list[str]:
    """Why the engine cannot serve ``model`` with ``generation_config`` (empty: it can)."""
    from transformers import DynamicCache, GenerationConfig
    from transformers.cache_utils import DynamicLayer

    reasons = []
    try:
        layers = DynamicCache(config=model.config).layers
    except Exception as err:  # a config the cache classes cannot read
        layers, reasons = [], [f"cache: {err}"]
    if any(type(layer) is not DynamicLayer for layer in layers):
        reasons.append("cache layers other than full attention (sliding window or linear attention)")
    if generation_config is not None:
        default = GenerationConfig()
        reasons += [name for name, neutral in _UNSUPPORTED.items()
                    if getattr(generation_config, name, None) not in (None, neutral, getattr(default, name, None))]
    return reasons


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix (binary search over C-level slice comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    hi -= 1
    while lo < hi:  # invariant: a[:lo] == b[:lo], and the answer is at most hi
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _layers(kv: Sequence[tuple[Any, Any]]) -> Any:
    """A ``DynamicCache`` holding ``kv`` without copying it (``DynamicCache(ddp_cache_data=...)`` copies)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache()
    for keys, values in kv:
        layer = DynamicLayer()
        layer.lazy_initialization(keys, values)
        layer.keys, layer.values = keys, values
        cache.layers.append(layer)
    return cache


def _slab_cache(buffers: list[tuple[Any, Any]], length: int) -> Any:
    """A cache over preallocated ``[B, H, capacity, D]`` buffers that decoding writes in place."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    class Slab(DynamicLayer):
        def __init__(self, keys: Any, values: Any) -> None:
            super().__init__()
            self.buf_k, self.buf_v, self.n = keys, values, length
            self.lazy_initialization(keys, values)
            self.keys, self.values = keys[..., :length, :], values[..., :length, :]

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            end = self.n + key_states.shape[-2]
            self.buf_k[..., self.n:end, :] = key_states
            self.buf_v[..., self.n:end, :] = value_states
            self.n = end
            self.keys, self.values = self.buf_k[..., :end, :], self.buf_v[..., :end, :]
            return self.keys, self.values

    cache = DynamicCache()
    cache.layers.extend(Slab(k, v) for k, v in buffers)
    return cache


@dataclass
class _Entry:
    tokens: list[int]  # the tokens whose keys/values `kv` holds, in order
    kv: list[tuple[Any, Any]]  # per layer: keys, values of shape [1, heads, len(tokens), head_dim]


@dataclass
class _Row:
    """One episode of a call: after prefill, its cache, its next-token logits and its output."""

    tokens: list[int]
    kv: list[tuple[Any, Any]]
    logits: Any
    out: list[int]
    logprobs: list[float]
    done: bool = False


class KVCacheEngine:
    """Multi-turn generation keyed by episode: ``generate_episodes(keys, sequences, max_new_tokens)``.

    ``sequences[i]`` is episode ``keys[i]``'s whole token sequence so far; the result holds each
    episode's new tokens, cut after the first of ``eos_token_ids``. ``seed`` makes sampling use a
    private ``torch.Generator`` (reproducible for the same calls); ``None`` uses the global RNG as
    ``model.generate`` does. ``logprobs=True`` also returns each sampled token's log-probability
    under the temperature-scaled distribution (what GRPO's loss computes). Calling the engine as a
    plain :data:`~seal_trl.play.generate_fn.GenerateFn` shares prefixes within the call and keeps nothing.
    """

    def __init__(self, model: Any, *, eos_token_ids: Sequence[int], pad_token_id: int | None = None,
                 sampling: Sampling | None = None, seed: int | None = None, logprobs: bool = False,
                 min_shared: int = 16) -> None:
        self.model = model
        self.eos_ids = {int(i) for i in eos_token_ids}
        self.pad_id = int(pad_token_id if pad_token_id is not None else min(self.eos_ids))
        self.sampling = sampling or Sampling.from_config(model.generation_config)
        self.logprobs = logprobs
        self.min_shared = max(int(min_shared), 1)
        self.generator: Any = None
        self.reseed(seed)
        self._entries: dict[Hashable, _Entry] = {}
        self._temp_keys = itertools.count()
        self.stats = {"calls": 0, "prefilled": 0, "reused": 0, "shared": 0, "resyncs": 0, "decode_steps": 0}

    # -- public ---------------------------------------------------------------------------
    def reseed(self, seed: int | None) -> None:
        """Restart the private sampling generator at ``seed`` (``None``: use the global RNG)."""
        import torch

        if seed is None:
            self.generator = None
            return
        self.generator = torch.Generator(device=self.model.device)
        self.generator.manual_seed(int(seed))

    def release(self, keys: Sequence[Hashable]) -> None:
        for key in keys:
            self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    @property
    def cached_tokens(self) -> int:
        return sum(len(e.tokens) for e in self._entries.values())

    def __call__(self, prompts: list[list[int]], max_new_tokens: int) -> Generation:
        keys = [("call", next(self._temp_keys)) for _ in prompts]
        try:
            return self.generate_episodes(keys, prompts, max_new_tokens)
        finally:
            self.release(keys)

    def generate_episodes(self, keys: Sequence[Hashable], sequences: Sequence[Sequence[int]],
                          max_new_tokens: int) -> Generation:
        import torch

        if len(keys) != len(sequences) or len(set(keys)) != len(keys):
            raise ValueError(f"need one distinct key per sequence, got {len(keys)} keys for {len(sequences)}")
        if any(len(s) == 0 for s in sequences) or max_new_tokens < 1:
            raise ValueError(f"need non-empty sequences and max_new_tokens >= 1, got {max_new_tokens}")
        self.stats["calls"] += 1
        if not sequences:
            return Generation([], [] if self.logprobs else None)
        with torch.no_grad():
            rows = self._prefill_all(keys, [list(s) for s in sequences])
            self._decode(rows, max_new_tokens)
        for key, row in zip(keys, rows):  # the last token was sampled but never fed
            self._entries[key] = _Entry(row.tokens + row.out[:-1], row.kv)
        return Generation([r.out for r in rows], [r.logprobs for r in rows] if self.logprobs else None)

    # -- prefill --------------------------------------------------------------------------
    def _prefill_all(self, keys: Sequence[Hashable], sequences: list[list[int]]) -> list[_Row]:
        starts: dict[int, tuple[list[tuple[Any, Any]], int]] = {}
        fresh = []
        for i, (key, seq) in enumerate(zip(keys, sequences)):
            entry = self._entries.pop(key, None)
            if entry is None:
                fresh.append(i)
                continue
            keep = min(_lcp(entry.tokens, seq), len(seq) - 1)  # at least one token to feed for the logits
            if keep < len(entry.tokens):
                self.stats["resyncs"] += keep < min(len(entry.tokens), len(seq) - 1)
            starts[i] = ([(k[..., :keep, :], v[..., :keep, :]) for k, v in entry.kv], keep)
            self.stats["reused"] += keep
        order = sorted(fresh, key=lambda i: sequences[i])
        self._share(order, sequences, [], 0, starts)
        rows = []
        for i, seq in enumerate(sequences):
            kv, start = starts[i]
            logits, kv = self._forward(seq[start:], kv, start)
            rows.append(_Row(seq, kv, logits, [], []))
        return rows

    def _share(self, order: list[int], sequences: list[list[int]], kv: list[tuple[Any, Any]], done: int,
               starts: dict[int, tuple[list[tuple[Any, Any]], int]]) -> None:
        """Encode each run of sorted sequences that shares >= ``min_shared`` tokens past ``done`` once."""
        runs, run = [], order[:1]
        for a, b in zip(order, order[1:]):
            if _lcp(sequences[a], sequences[b]) >= done + self.min_shared:
                run.append(b)
            else:
                runs.append(run)
                run = [b]
        runs += [run] if run else []
        for run in runs:
            shared = min(min(len(sequences[i]) for i in run) - 1,
                         min((_lcp(sequences[a], sequences[b]) for a, b in zip(run, run[1:])), default=0))
            if len(run) == 1 or shared - done < self.min_shared:
                starts.update({i: (kv, done) for i in run})
                continue
            _, deeper = self._forward(sequences[run[0]][done:shared], kv, done)
            self.stats["shared"] += (len(run) - 1) * (shared - done)
            self._share(run, sequences, deeper, shared, starts)

    def _forward(self, ids: list[int], kv: list[tuple[Any, Any]], start: int) -> tuple[Any, list[tuple[Any, Any]]]:
        """Encode ``ids`` at positions ``start...`` after the cache ``kv``: ``(last logits [V], new kv)``."""
        import torch

        device = self.model.device
        cache = _layers(kv)
        out = self.model(input_ids=torch.tensor([ids], device=device), cache=cache, use_cache=True,
                         position_ids=torch.arange(start, start + len(ids), device=device).unsqueeze(0),
                         logits_to_keep=1)
        self.stats["prefilled"] += len(ids)
        return out.logits[0, -1], [(layer.keys, layer.values) for layer in cache.layers]

    # -- decode ---------------------------------------------------------------------------
    def _decode(self, rows: list[_Row], max_new_tokens: int) -> None:
        """Sample up to ``max_new_tokens`` per row; running rows decode together, one forward per step."""
        import torch

        self._emit(rows, torch.stack([r.logits for r in rows]), max_new_tokens)
        live = [r for r in rows if not r.done]
        if not live:
            for r in rows:
                r.logits = None
            return
        device = self.model.device
        width = max(len(r.tokens) for r in live)
        capacity = width + max_new_tokens - 1
        buffers, mask = self._stack(live, width, capacity)
        cache = _slab_cache(buffers, width)
        offsets = [width - len(r.tokens) for r in live]  # left padding of each live row
        positions = torch.tensor([len(r.tokens) for r in live], device=device)
        for step in range(1, max_new_tokens):
            col = cache.layers[0].n  # the column this step writes (compaction moves it left)
            mask[:, col] = 1
            feed = torch.tensor([[r.out[-1] if not r.done else self.pad_id] for r in live], device=device)
            logits = self.model(input_ids=feed, attention_mask=mask[:, :col + 1], cache=cache, use_cache=True,
                                position_ids=positions.unsqueeze(1)).logits[:, -1]
            self.stats["decode_steps"] += 1
            positions = positions + 1
            self._emit(live, logits, max_new_tokens)
            finished = [i for i, r in enumerate(live) if r.done]
            if len(finished) == len(live) or 2 * len(finished) >= len(live) > 1:
                live, offsets, positions, mask, cache = self._compact(live, offsets, positions, mask, cache)
                if not live:
                    break
        self._keep(live, offsets, cache)
        for r in rows:
            r.logits = None

    def _stack(self, live: list[_Row], width: int, capacity: int) -> tuple[list[tuple[Any, Any]], Any]:
        import torch

        buffers = []
        for layer in range(len(live[0].kv)):
            k0, v0 = live[0].kv[layer]
            keys = k0.new_zeros((len(live), k0.shape[1], capacity, k0.shape[3]))
            values = v0.new_zeros((len(live), v0.shape[1], capacity, v0.shape[3]))
            for b, r in enumerate(live):
                k, v = r.kv[layer]
                keys[b, :, width - k.shape[-2]:width] = k[0]
                values[b, :, width - v.shape[-2]:width] = v[0]
            buffers.append((keys, values))
        mask = torch.zeros((len(live), capacity), dtype=torch.long, device=self.model.device)
        for b, r in enumerate(live):
            mask[b, width - len(r.tokens):width] = 1
        for r in live:
            r.kv = []  # the buffers hold it now
        return buffers, mask

    def _compact(self, live: list[_Row], offsets: list[int], positions: Any, mask: Any,
                 cache: Any) -> tuple[list[_Row], list[int], Any, Any, Any]:
        """Give finished rows their caches and drop them from the batch (and the padding only they needed)."""
        import torch

        gone = [b for b, r in enumerate(live) if r.done]
        self._keep([live[b] for b in gone], [offsets[b] for b in gone], cache, at=gone)
        stay = [b for b, r in enumerate(live) if not r.done]
        if not stay:
            return [], [], positions, mask, cache
        cut = min(offsets[b] for b in stay)
        index = torch.tensor(stay, device=self.model.device)
        length = cache.layers[0].n - cut
        buffers = [(layer.buf_k.index_select(0, index)[:, :, cut:].contiguous(),
                    layer.buf_v.index_select(0, index)[:, :, cut:].contiguous()) for layer in cache.layers]
        return ([live[b] for b in stay], [offsets[b] - cut for b in stay], positions.index_select(0, index),
                mask.index_select(0, index)[:, cut:].contiguous(), _slab_cache(buffers, length))

    def _keep(self, rows: list[_Row], offsets: list[int], cache: Any, at: list[int] | None = None) -> None:
        """Copy each row's own keys/values (no padding, no column past its last fed token) out of the batch."""
        for b, r, off in zip(at if at is not None else range(len(rows)), rows, offsets):
            end = off + len(r.tokens) + len(r.out) - 1
            r.kv = [(layer.buf_k[b:b + 1, :, off:end].clone(), layer.buf_v[b:b + 1, :, off:end].clone())
                    for layer in cache.layers]

    # -- sampling -------------------------------------------------------------------------
    def _emit(self, rows: list[_Row], logits: Any, max_new_tokens: int) -> None:
        """Pick the next token of every unfinished row (finished rows' picks are discarded)."""
        tokens, logprobs = self._pick(logits)
        for b, r in enumerate(rows):
            if r.done:
                continue
            r.out.append(int(tokens[b]))
            if logprobs is not None:
                r.logprobs.append(float(logprobs[b]))
            r.done = r.out[-1] in self.eos_ids or len(r.out) >= max_new_tokens

    def _pick(self, logits: Any) -> tuple[Any, Any]:
        import torch

        logits = logits.float()
        s = self.sampling
        scaled = logits if s.greedy else logits / s.temperature
        if s.greedy:
            tokens = scaled.argmax(dim=-1)
        else:
            probs = torch.softmax(_filter(scaled, s), dim=-1)
            tokens = torch.multinomial(probs, 1, generator=self.generator).squeeze(1)
        if not self.logprobs:
            return tokens.tolist(), None
        return tokens.tolist(), torch.log_softmax(scaled, dim=-1).gather(1, tokens[:, None]).squeeze(1).tolist()


def _filter(scores: Any, s: Sampling) -> Any:
    """Top-k, then top-p, then min-p, as transformers' logits warpers do (at least one token survives)."""
    import torch

    low = torch.finfo(scores.dtype).min
    if s.top_k and s.top_k < scores.shape[-1]:
        kth = torch.topk(scores, s.top_k, dim=-1).values[..., -1:]
        scores = scores.masked_fill(scores < kth, low)
    if s.top_p < 1.0:
        ordered, index = torch.sort(scores, descending=False)
        cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)
        remove = cumulative <= 1 - s.top_p
        remove[..., -1:] = False
        scores = scores.masked_fill(remove.scatter(1, index, remove), low)
    if s.min_p:
        probs = scores.softmax(dim=-1)
        floor = s.min_p * probs.max(dim=-1, keepdim=True).values
        scores = scores.masked_fill(probs < floor, low)
    return scores
