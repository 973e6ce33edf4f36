"""Supervised warm start: SFT of the tiny Llama on oracle trajectories.

It makes the shipped default agent (``seal warmstart``, see :mod:`seal_trl.agent.checkpoint`) and the
efficacy study's shared starting point.

Every train task (or the first ``num_tasks``) is played once by :class:`~seal_envs.agents.OracleAgent`
on the canonical surface; the final ``info["messages"]`` and ``info["tools"]`` are rendered with
the tiny chat template. The template is token-prefix-stable (see :mod:`seal_trl.agent.tiny`), so the
tokens of ``messages[:k]`` are a prefix of those of ``messages[:k+1]`` and each assistant message
owns a contiguous token span: the loss covers exactly those spans (the ``<|assistant|>`` header
is context, the message body and its ``<|end|>`` are targets). That is the text the policy emits
in a rollout, rendered the way the rollout and ``HFBatchAgent`` render history.

The result (model, tokenizer, ``warmstart.json`` with the loss curve and settings) is cached in
``<out>/warmstart``; a second call with the same settings loads it instead of training.
"""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from seal_envs.core.statefile import read_json

ENV_ID = "seal/ToolUse-v0"


@dataclass
class WarmStartConfig:
    num_tasks: int = 400
    # A wall-clock budget stops the loop at the first of minutes / max_steps and makes the cosine
    # follow the clock, so the result depends on the machine; ``minutes=None`` schedules by steps
    # alone, which is what makes a warm start reproducible from its seeds.
    minutes: float | None = 30.0
    max_steps: int = 100_000
    batch_size: int = 16
    lr: float = 3e-3
    warmup_steps: int = 30
    min_lr_frac: float = 0.05
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    seed: int = 0
    bf16: bool = True
    difficulties: tuple[int, ...] = (1, 2, 3, 4)
    extra_tasks: int = 0  # more train-domain tasks (seeds EXTRA_SEED..): see extra_conversations
    init_from: str | None = None  # continue from this checkpoint folder (a second schedule), else random init
    domains: tuple[str, ...] | None = None  # None: the five train domains (the env's default)

    def key(self) -> dict[str, Any]:
        d = asdict(self)
        d["difficulties"] = list(self.difficulties)
        if self.init_from is None:
            d.pop("init_from")  # keeps the cache key of warm starts trained before the field existed
        if self.domains is None:
            d.pop("domains")  # keeps the cache key of warm starts trained before the field existed
        else:
            d["domains"] = list(self.domains)
        return d


EXTRA_SEED = 10_000  # extra warm-start tasks use seeds 10_000.. (train 0-399, test 100_000+, ood 200_000+)


def _play(env: Any, options: dict) -> dict:
    from seal_envs.agents import OracleAgent, run_episode

    reward, info, _ = run_episode(env, OracleAgent(), options=options)
    return {"messages": info["messages"], "tools": info["tools"], "task_id": info["task_id"],
            "difficulty": info["difficulty"], "reward": reward}


def oracle_conversations(num_tasks: int, difficulties=(1, 2, 3, 4), split: str = "train",
                         domains: tuple[str, ...] | None = None) -> list[dict]:
    """``[{"messages", "tools", "task_id", "difficulty"}]`` of the oracle's episodes."""
    import gymnasium as gym

    import seal_envs  # noqa: F401

    env = gym.make(ENV_ID, split=split, domains=domains).unwrapped
    out = [_play(env, {"split": split, "index": index}) for index in range(min(num_tasks, len(env.task_set)))
           if env.task_set.slot(index).difficulty in difficulties]
    env.close()
    return out


def extra_conversations(num_tasks: int, difficulties=(1, 2, 3, 4),
                        domains: tuple[str, ...] | None = None) -> tuple[list[dict], int]:
    """Oracle episodes of ``num_tasks`` more tasks from the train domains' generators (train
    phrasings), seeds ``EXTRA_SEED + k``, cycling domains and difficulties like a split does.

    They stand in for what a pretrained model brings to SEAL (the paper starts from an instruct
    model): the call format and copying values from the request, learned from variety rather than
    by memorizing 400 tasks. A 1.3M model trained 30 minutes on the 400 train tasks alone
    memorized them (loss 0.02) and copied no value it had not seen (0% test). Tasks whose opening
    request equals one of a test or ood task's are dropped; the count dropped is returned.
    """
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_envs.tasks import fresh_tasks

    tasks = fresh_tasks(num_tasks, domains, tuple(difficulties), start=EXTRA_SEED)
    env = gym.make(ENV_ID, domains=domains).unwrapped
    out = [_play(env, {"task": task}) for task in tasks]
    dropped = num_tasks - len(tasks)
    env.close()
    return out, dropped


@dataclass(frozen=True)
class Example:
    """One tokenized conversation; ``ids[:prefix_len]`` is the system message (with the tools)."""

    ids: list[int]
    labels: list[int]
    prefix_len: int


def tokenize_conversation(tokenizer: Any, messages: list[dict], tools: list[dict]) -> Example:
    """Labels are -100 outside assistant message bodies."""
    def ids(msgs: list[dict]) -> list[int]:
        text = tokenizer.apply_chat_template(msgs, tools=tools, tokenize=False)
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    full = ids(messages)
    labels = [-100] * len(full)
    header = tokenizer.convert_tokens_to_ids("<|assistant|>")
    prev = ids(messages[:1])
    prefix_len = len(prev)
    for k in range(1, len(messages)):
        cur = ids(messages[: k + 1])
        if cur[: len(prev)] != prev:
            raise ValueError("chat template is not token-prefix-stable; cannot mask assistant spans")
        if messages[k]["role"] == "assistant":
            start = len(prev)
            if full[start] == header:
                start += 1  # the role header is context, not a target
            for i in range(start, len(cur)):
                labels[i] = full[i]
        prev = cur
    return Example(full, labels, prefix_len)


def build_examples(tokenizer: Any, conversations: list[dict]) -> list[Example]:
    return [tokenize_conversation(tokenizer, c["messages"], c["tools"]) for c in conversations]


def _batches(examples: list[Example], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches whose conversations share one system prefix (one domain's tools), so the
    prefix is run once per batch; within a prefix group, chunks of 8 batches are sorted by length
    (less padding)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, ex in enumerate(examples):
        groups.setdefault(tuple(ex.ids[: ex.prefix_len]), []).append(i)
    batches = []
    for key in sorted(groups):
        order = groups[key][:]
        rng.shuffle(order)
        chunk = batch_size * 8
        for c in range(0, len(order), chunk):
            part = sorted(order[c:c + chunk], key=lambda i: len(examples[i].ids))
            batches += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def _collate(rows: list[tuple[list[int], list[int]]], pad_id: int):
    import torch

    width = max(len(x) for x, _ in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for r, (x, y) in enumerate(rows):
        ids[r, : len(x)] = torch.tensor(x)
        labels[r, : len(y)] = torch.tensor(y)
        mask[r, : len(x)] = 1
    return ids, mask, labels


def shared_prefix_loss(model: Any, examples: list[Example], idx: list[int], pad_id: int):
    """Mean next-token loss over the batch's target tokens, with the common system prefix run once.

    The prefix (a domain's system prompt and tools: about two thirds of every conversation) is
    encoded for one row and its keys/values expanded to the batch, so a step costs the prefix once
    plus each suffix; gradients flow back through the expansion. The loss equals the plain
    full-sequence loss (no target lies in the prefix). Returns ``(loss, tokens covered)``.
    """
    import torch
    from transformers import DynamicCache

    first = examples[idx[0]]
    p = first.prefix_len
    if any(examples[i].ids[:p] != first.ids[:p] for i in idx):
        raise ValueError("a shared-prefix batch mixes system prompts")
    ids, mask, labels = _collate([(examples[i].ids[p:], examples[i].labels[p:]) for i in idx], pad_id)
    n = len(idx)
    out = model(input_ids=torch.tensor([first.ids[:p]]), use_cache=True)
    kv = [(layer.keys.expand(n, -1, -1, -1), layer.values.expand(n, -1, -1, -1))
          for layer in out.past_key_values.layers]
    full_mask = torch.cat([torch.ones(n, p, dtype=mask.dtype), mask], dim=1)
    positions = torch.arange(p, p + ids.shape[1]).unsqueeze(0).expand(n, -1)
    loss = model(input_ids=ids, attention_mask=full_mask, position_ids=positions,
                 past_key_values=DynamicCache(ddp_cache_data=kv), labels=labels).loss
    return loss, p * n + int(mask.sum())


def train_warmstart(cfg: WarmStartConfig, out_dir: Path, log: Callable[[str], None] = print,
                    on_step: Callable[[int, int], None] | None = None, save_every: int = 0,
                    snapshot_dir: Path | None = None) -> dict[str, Any]:
    """Train (or load from ``out_dir``) the shared warm start; returns its metadata.

    ``on_step(step, total)`` after every step (a bar, :mod:`seal_trl.training.progress`) replaces the
    step lines of ``log``. ``save_every=N`` also saves the model every N steps to
    ``snapshot_dir/step-NNNNN`` (default ``out_dir/steps``): the points along one schedule where a
    skill emerges are where RL can teach it (issue 31), and only a run of the schedule itself
    shows where they are. Saving does not change the training."""
    import torch

    from seal_trl.agent.tiny import build_tiny_model, build_tiny_tokenizer

    out_dir = Path(out_dir)
    meta_path = out_dir / "warmstart.json"
    if meta_path.exists():
        meta = read_json(meta_path, "warm start")  # the bounds of every file read
        if meta.get("config") == cfg.key():
            log(f"[warmstart] cached: {out_dir} ({meta['steps']} steps, final loss {meta['final_loss']:.3f})")
            return meta
        log("[warmstart] cached settings differ: retraining")
    (out_dir / "eval.json").unlink(missing_ok=True)  # an evaluation belongs to the model it measured
    tokenizer = build_tiny_tokenizer()
    t0 = time.perf_counter()
    convs = oracle_conversations(cfg.num_tasks, cfg.difficulties, domains=cfg.domains)
    extra, dropped = (extra_conversations(cfg.extra_tasks, cfg.difficulties, cfg.domains) if cfg.extra_tasks
                      else ([], 0))
    if cfg.extra_tasks:
        log(f"[warmstart] {len(extra)} extra train-domain tasks ({dropped} dropped: same request as a test/ood task)")
    examples = build_examples(tokenizer, convs + extra)
    tokens = sum(len(ex.ids) for ex in examples)
    targets = sum(sum(t != -100 for t in ex.labels) for ex in examples)
    log(f"[warmstart] {len(examples)} oracle trajectories, {tokens} tokens ({targets} targets), "
        f"prepared in {time.perf_counter() - t0:.1f} s")
    if cfg.init_from:
        from transformers import LlamaForCausalLM

        model = LlamaForCausalLM.from_pretrained(cfg.init_from)
    else:
        model = build_tiny_model(tokenizer, hidden_size=cfg.hidden_size, num_layers=cfg.num_layers,
                                 num_heads=cfg.num_heads, seed=cfg.seed)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01, betas=(0.9, 0.95))
    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    budget = float("inf") if cfg.minutes is None else cfg.minutes * 60.0
    est_total = cfg.max_steps
    history: list[dict[str, Any]] = []
    step, epoch, seen_tokens = 0, 0, 0
    start = time.perf_counter()
    model.train()
    done = False
    while not done:
        epoch += 1
        for idx in _batches(examples, cfg.batch_size, rng):
            elapsed = time.perf_counter() - start
            if step >= cfg.max_steps or elapsed >= budget:
                done = True
                break
            if step >= 10 and cfg.minutes is not None:  # the cosine follows the clock, or max_steps if sooner
                est_total = min(cfg.max_steps, int(step * budget / elapsed))
            progress = min(max(step / max(cfg.max_steps, 1), elapsed / budget), 1.0)
            lr = cfg.lr * min(1.0, (step + 1) / cfg.warmup_steps)
            lr *= cfg.min_lr_frac + (1 - cfg.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * progress))
            for g in opt.param_groups:
                g["lr"] = lr
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.bf16):
                loss, covered = shared_prefix_loss(model, examples, idx, tokenizer.pad_token_id)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            seen_tokens += covered
            if on_step is not None:
                on_step(step, max(est_total, step))
            if save_every and step % save_every == 0:
                snap = Path(snapshot_dir or out_dir / "steps") / f"step-{step:05d}"
                model.save_pretrained(snap)
                tokenizer.save_pretrained(snap)
                (snap / "snapshot.json").write_text(json.dumps(
                    {"step": step, "of": cfg.max_steps, "lr": lr, "loss": round(loss.item(), 4),
                     "config": cfg.key()}, indent=1))
            if step % 10 == 0 or step == 1:
                rec = {"step": step, "epoch": epoch, "loss": round(loss.item(), 4), "lr": lr,
                       "seconds": round(time.perf_counter() - start, 1)}
                history.append(rec)
                if on_step is None:
                    log(f"[warmstart] step {step}/{est_total} epoch {epoch} loss {loss.item():.3f} lr {lr:.2e} "
                        f"{seen_tokens / max(time.perf_counter() - start, 1e-9):.0f} tok/s")
    if on_step is not None:
        on_step(step, step)  # the loop may stop before the estimate (the clock): close the bar
    seconds = time.perf_counter() - start
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir / "model")
    tokenizer.save_pretrained(out_dir / "model")
    meta = {"config": cfg.key(), "params": params, "examples": len(examples), "extra_dropped": dropped, "tokens": tokens,
            "target_tokens": targets, "steps": step, "epochs": epoch, "seconds": round(seconds, 1),
            "final_loss": history[-1]["loss"] if history else float("nan"), "history": history}
    meta_path.write_text(json.dumps(meta, indent=1))
    log(f"[warmstart] done: {step} steps, {epoch} epochs, {seconds:.0f} s, {params} params -> {out_dir}")
    return meta


def load_warmstart(out_dir: Path):
    """``(model, tokenizer)`` of a trained warm start (the tokenizer is rebuilt deterministically)."""
    from transformers import LlamaForCausalLM

    from seal_trl.agent.tiny import build_tiny_tokenizer

    model = LlamaForCausalLM.from_pretrained(Path(out_dir) / "model")
    return model, build_tiny_tokenizer()
