"""The shared-prefix scoring (seal_trl.training.prefix_loss) against TRL's own ``_get_per_token_logps_and_entropies``
on a real generation batch of the tiny model: log-probabilities, entropies and gradients."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from trl import GRPOTrainer  # noqa: E402

from seal_helpers import ScriptedPolicy, cpu_args  # noqa: E402

from seal_trl.play.data import make_dataset  # noqa: E402
from seal_trl.training.prefix_loss import unsupported  # noqa: E402
from seal_trl.agent.tiny import build_tiny_model  # noqa: E402
from seal_trl.training.trainer import SEALGRPOTrainer  # noqa: E402

TOL = 1e-5


def make_trainer(tok, tmp_path, saved: bool = False, **overrides):
    """``saved``: the model is loaded from a folder, so TRL can load the reference model (``beta > 0``)."""
    settings = dict(per_device_train_batch_size=8, num_generations=4, max_steps=1, temperature=0.7)
    settings.update(overrides)
    args = cpu_args(tmp_path, **settings)
    scripted = ScriptedPolicy(tok)
    # two layers, so a wrong prefix cache would change the attention of the layer above it
    model = build_tiny_model(tok, hidden_size=32, num_layers=2, num_heads=2, seed=0)
    if saved:
        from transformers import AutoModelForCausalLM

        model.save_pretrained(tmp_path / "model")
        model = AutoModelForCausalLM.from_pretrained(tmp_path / "model")
    trainer = SEALGRPOTrainer(model=model, args=args, train_dataset=make_dataset(num_rows=8),
                              processing_class=tok, generate_fn=scripted)
    scripted.rollout = trainer.seal_rollout
    return trainer


@pytest.fixture(scope="module")
def batch(tok, tmp_path_factory):
    """A real generation batch: 2 tasks x 4 episodes played by the scripted policy."""
    trainer = make_trainer(tok, tmp_path_factory.mktemp("prefix"))
    trainer.model.train()
    rows = [trainer.train_dataset[i] for i in (0, 0, 0, 0, 1, 1, 1, 1)]
    out = trainer._generate_and_score_completions(rows)
    return trainer, out


def layout(out, rows):
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1)[rows]
    mask = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)[rows]
    return ids, mask, out["completion_ids"].size(1)


def score(trainer, fn, ids, mask, keep, batch_size=None):
    """Log-probs, entropies and the gradient of a GRPO-like loss over the model tokens."""
    model = trainer.model
    model.zero_grad(set_to_none=True)
    logps, entropies, _ = fn(model, ids, mask, keep, batch_size=batch_size, compute_entropy=True)
    weights = torch.linspace(-1.0, 1.0, ids.size(0))[:, None]
    ((logps * weights).sum() + 0.1 * entropies.sum()).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logps.detach(), entropies.detach(), grads


def assert_same(trainer, ids, mask, keep, batch_size=None):
    trainer.seal_prefix_stats.clear()
    mine = score(trainer, trainer._get_per_token_logps_and_entropies, ids, mask, keep, batch_size)
    stats = dict(trainer.seal_prefix_stats)
    trl = score(trainer, lambda *a, **k: GRPOTrainer._get_per_token_logps_and_entropies(trainer, *a, **k),
                ids, mask, keep, batch_size)
    assert mine[0].shape == trl[0].shape == (ids.size(0), keep)
    assert float((mine[0] - trl[0]).abs().max()) <= TOL
    assert float((mine[1] - trl[1]).abs().max()) <= TOL
    assert set(mine[2]) == set(trl[2])
    for name, grad in trl[2].items():
        assert float((mine[2][name] - grad).norm()) <= 1e-4 * float(grad.norm()) + 1e-7, name
    return stats


@pytest.mark.slow
def test_real_batch_matches_trl(batch):
    trainer, out = batch
    ids, mask, keep = layout(out, list(range(8)))
    # the batch is what the path is for: two prompts of hundreds of tokens, env tokens in the completions
    assert int(out["prompt_mask"].sum(1).min()) > 100 and not bool(out["tool_mask"].all())
    assert len({tuple(r) for r in out["prompt_ids"].tolist()}) == 2
    stats = assert_same(trainer, ids, mask, keep)
    assert stats["shared_rows"] == 8 and stats.get("plain_rows", 0) == 0 and stats["prefix_tokens_saved"] > 600
    assert not any(k.startswith("fallback") for k in stats)


def test_prompt_reaches_the_scores(batch):
    """The comparison can fail: scoring the completions without their prompt's first half moves the
    log-probabilities far beyond the tolerance, so a wrong or missing prefix cache would show."""
    trainer, out = batch
    ids, mask, keep = layout(out, list(range(8)))
    cut = mask.clone()
    first = int((out["prompt_mask"][0] == 0).sum())
    cut[:, : first + (out["prompt_ids"].size(1) - first) // 2] = 0
    with torch.no_grad():
        full = GRPOTrainer._get_per_token_logps_and_entropies(trainer, trainer.model, ids, mask, keep)[0]
        short = GRPOTrainer._get_per_token_logps_and_entropies(trainer, trainer.model, ids, cut, keep)[0]
    assert float((full - short).abs().max()) > 100 * TOL


@pytest.mark.slow
def test_shuffled_partial_groups_and_singles(batch):
    """TRL shuffles and splits: rows of a group come in any order, partial, next to single rows."""
    trainer, out = batch
    ids, mask, keep = layout(out, [5, 0, 7, 2, 4])  # task 1: 5, 7, 4; task 0: 0, 2
    stats = assert_same(trainer, ids, mask, keep)
    assert stats["shared_rows"] == 5
    ids, mask, keep = layout(out, [6, 1, 3])  # task 1 alone: a single row, through TRL's own method
    stats = assert_same(trainer, ids, mask, keep)
    assert stats["shared_rows"] == 2 and stats["plain_rows"] == 1


@pytest.mark.slow
def test_chunks_of_batch_size(batch):
    trainer, out = batch
    ids, mask, keep = layout(out, [0, 4, 1, 5, 2, 6, 3, 7])
    stats = assert_same(trainer, ids, mask, keep, batch_size=3)  # chunks [0 4 1] [5 2 6] [3 7]
    assert stats["shared_rows"] == 4 and stats["plain_rows"] == 4


def test_fallbacks(tok, tmp_path, batch):
    trainer, out = batch
    assert unsupported(trainer.model) == []
    assert unsupported(trainer.model, num_processes=2) == ["2 processes"]
    ids, mask, keep = layout(out, list(range(4)))
    trainer.model.activation_checkpointing_enable()
    try:
        trainer.seal_prefix_stats.clear()
        trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep)
        assert trainer.seal_prefix_stats["fallback: activation checkpointing (drops the cache)"] == 1
        assert trainer.seal_prefix_stats["shared_rows"] == 0
    finally:
        trainer.model.activation_checkpointing_disable()
    # per-token type ids (multimodal inputs): TRL's method as is
    trainer.seal_prefix_stats.clear()
    types = torch.zeros_like(ids)
    with torch.no_grad():
        mine = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask, keep, token_type_ids=types)[0]
        trl = GRPOTrainer._get_per_token_logps_and_entropies(trainer, trainer.model, ids, mask, keep,
                                                             token_type_ids=types)[0]
    assert trainer.seal_prefix_stats == {"fallback: images": 1} and torch.equal(mine, trl)


@pytest.mark.slow
def test_training_steps_equal_with_and_without(tok, tmp_path):
    """Two steps with old (num_iterations=2) and reference (beta > 0) log-probabilities: the same
    losses and weights whether the shared-prefix path is on or off."""
    runs = {}
    for on in (True, False):
        trainer = make_trainer(tok, tmp_path / str(on), saved=True, shared_prefix_loss=on, max_steps=2,
                               num_iterations=2, beta=0.04)
        assert trainer.ref_model is not None
        trainer.train()
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        assert any(h.get("kl", 0) > 0 for h in trainer.state.log_history)  # the reference log-probs count
        runs[on] = (losses, {n: p.detach().clone() for n, p in trainer.model.named_parameters()},
                    dict(trainer.seal_prefix_stats))
    assert runs[False][2] == {"fallback: off": runs[False][2]["fallback: off"]}
    assert runs[True][2]["shared_rows"] > 0 and not any(k.startswith("fallback") for k in runs[True][2])
    # one generation batch (2 steps = 2 iterations over it): old and reference log-probs once, the loss twice
    assert runs[False][2]["fallback: off"] == 4
    assert runs[True][2]["shared_rows"] == 4 * 8
    torch.testing.assert_close(torch.tensor(runs[True][0]), torch.tensor(runs[False][0]), rtol=1e-4, atol=1e-5)
    for name, value in runs[False][1].items():
        torch.testing.assert_close(runs[True][1][name], value, rtol=1e-4, atol=1e-5)
