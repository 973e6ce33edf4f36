"""KVCacheEngine: the same tokens as uncached generation, caches that follow the sequences they are
given, seeded sampling, and the rollout and the evaluation agent seeing the same token ids."""

from __future__ import annotations

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import seal_envs  # noqa: E402,F401
from seal_trl.play.chat import make_renderer  # noqa: E402
from seal_trl.play.engine import KVCacheEngine, Sampling, _lcp, engine_unsupported  # noqa: E402
from seal_trl.play.generate_fn import padded_generate_fn  # noqa: E402
from seal_trl.play.rollout import MultiTurnRollout  # noqa: E402


@pytest.fixture(scope="module")
def model(tok):
    """A small Llama whose greedy output depends on its context (random weights of std 0.3; the tiny
    model's default init repeats one token) and that emits EOS now and then (+4.5 on its logit), so
    episodes stop at different lengths and a wrong cache would show in the tokens."""
    from seal_trl.agent.tiny import build_tiny_model

    m = build_tiny_model(tok, hidden_size=32, num_layers=2, num_heads=2, num_kv_heads=1).eval()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    eos = torch.tensor([tok.eos_token_id])
    m.get_output_embeddings().register_forward_hook(lambda mod, args, out: out.index_add(-1, eos, torch.full(
        (*out.shape[:-1], 1), 4.5)))
    return m


def engine(model, tok, **kwargs):
    return KVCacheEngine(model, eos_token_ids=[tok.eos_token_id], pad_token_id=tok.pad_token_id, **kwargs)


def prompts(tok, seeds):
    renderer = make_renderer(tok, [tok.eos_token_id])
    out = []
    for seed in seeds:
        _, info = gym.make("seal/ToolUse-v0").reset(seed=seed)
        out.append(renderer.prompt_ids(info["new_messages"], info["tools"]))
    return out


def one_at_a_time(model, tok, seqs, n):
    ref = padded_generate_fn(model, tok)
    return [ref([s], n).ids[0] for s in seqs]


def test_lcp():
    assert _lcp([1, 2, 3], [1, 2, 3]) == 3 and _lcp([1, 2, 3], [1, 2]) == 2 and _lcp([], [1]) == 0
    assert _lcp([1, 2, 3, 4, 5], [1, 2, 9, 4, 5]) == 2 and _lcp([7], [8]) == 0
    assert all(_lcp(list(range(50)), list(range(k)) + [-1] * (50 - k)) == k for k in range(51))


@pytest.mark.slow
def test_greedy_turns_equal_uncached_generation_and_caches_are_reused(model, tok):
    # seeds 0 and 4 share a 512-token prompt prefix, 0/2/4 share the bank system text, 0 appears twice
    seqs = prompts(tok, [0, 0, 2, 4, 1, 3])
    eng = engine(model, tok)
    keys = list("abcdef")
    reply = tok("<|user|>and now?<|end|><|assistant|>", add_special_tokens=False)["input_ids"]
    lengths = set()
    for turn in range(3):
        out = eng.generate_episodes(keys, seqs, 12)
        assert out.ids == one_at_a_time(model, tok, seqs, 12), f"turn {turn}"
        assert out.logprobs is None
        lengths |= {len(o) for o in out.ids}
        # the cache holds each sequence and its output but the last sampled token (never fed)
        assert [eng._entries[k].tokens for k in keys] == [s + o[:-1] for s, o in zip(seqs, out.ids)]
        assert all(e.kv[0][0].shape[-2] == len(e.tokens) for e in eng._entries.values())
        seqs = [s + o + ([] if o[-1] == tok.eos_token_id else [tok.eos_token_id]) + reply for s, o in zip(seqs, out.ids)]
    assert len(lengths) > 1  # some episodes stopped at EOS, others ran to the limit
    assert eng.stats["shared"] >= 512 + 5 * 6  # the common prefixes were encoded once
    assert eng.stats["resyncs"] == 0 and eng.stats["reused"] > eng.stats["prefilled"]
    eng.release(keys[:2])
    assert len(eng._entries) == len(keys) - 2
    eng.clear()
    assert eng.cached_tokens == 0


def test_a_sequence_that_rewrites_cached_tokens_is_resynced(model, tok):
    seqs = prompts(tok, [0, 5])
    eng = engine(model, tok)
    first = eng.generate_episodes(["x", "y"], seqs, 8)
    # episode x's next turn changes a token deep inside what is cached (a template re-rendering history)
    changed = list(seqs[0] + first.ids[0])
    changed[200] = changed[201]
    grown = seqs[1] + first.ids[1] + [tok.eos_token_id]
    out = eng.generate_episodes(["x", "y"], [changed, grown], 10)
    assert out.ids == one_at_a_time(model, tok, [changed, grown], 10)
    assert eng.stats["resyncs"] == 1
    # a shorter sequence than the cache (a truncated turn) is served from the common prefix
    short = changed[:300]
    assert eng.generate_episodes(["x"], [short], 6).ids == one_at_a_time(model, tok, [short], 6)
    assert eng._entries["x"].tokens[:300] == short


@pytest.mark.slow
def test_generate_fn_contract_and_uncached_reference_agree_in_a_rollout(model, tok):
    def play(generate):
        rollout = MultiTurnRollout(tok, generate, max_episode_steps=4, max_new_tokens=10)
        envs = [gym.make("seal/ToolUse-v0", max_steps=4) for _ in range(5)]
        return rollout, rollout.run(envs, [0, 0, 1, 2, 3])

    cached_rollout, cached = play(model)  # a model gets the engine, called per episode
    assert isinstance(cached_rollout.generate, KVCacheEngine) and cached_rollout.keyed
    assert cached_rollout.generate._entries == {}  # every episode's cache was freed
    _, plain = play(engine(model, tok).__call__)  # the engine as a plain GenerateFn (nothing kept)
    _, reference = play(padded_generate_fn(model, tok))
    turns = [r.num_steps for r in reference]
    assert len(set(turns)) > 1  # episodes ended at different turns
    for a, b, c in zip(cached, plain, reference):
        assert a.completion_ids == b.completion_ids == c.completion_ids
        assert a.env_mask == c.env_mask and a.num_steps == c.num_steps
    assert cached_rollout.generate.stats["reused"] > 0


def test_seeded_sampling_is_reproducible_and_logprobs_are_the_policy_s(model, tok):
    seqs = prompts(tok, [0, 1, 2])
    sampling = Sampling(do_sample=True, temperature=0.7, top_k=40, top_p=0.9)
    runs = []
    for seed in (1, 1, 2):
        eng = engine(model, tok, sampling=sampling, seed=seed, logprobs=True)
        a = eng.generate_episodes([0, 1, 2], seqs, 8)
        b = eng.generate_episodes([0, 1, 2], [s + o + [tok.eos_token_id] for s, o in zip(seqs, a.ids)], 8)
        runs.append((a, b))
    assert [r.ids for r in runs[0]] == [r.ids for r in runs[1]]
    assert [r.ids for r in runs[0]] != [r.ids for r in runs[2]]
    a = runs[0][0]
    with torch.no_grad():  # the log-probability of each sampled token under logits / temperature
        for seq, ids, lps in zip(seqs, a.ids, a.logprobs):
            logits = model(input_ids=torch.tensor([seq + ids])).logits[0, len(seq) - 1:-1] / 0.7
            expected = torch.log_softmax(logits, -1).gather(1, torch.tensor(ids)[:, None]).squeeze(1)
            assert torch.allclose(torch.tensor(lps), expected, atol=1e-4)


def test_top_k_and_top_p_keep_only_their_tokens(model, tok):
    from seal_trl.play.engine import _filter

    scores = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    low = torch.finfo(scores.dtype).min
    assert (_filter(scores, Sampling(True, 1.0, top_k=2)) > low).tolist() == [[True, True, False, False]]
    assert (_filter(scores, Sampling(True, 1.0, top_p=0.7)) > low).tolist() == [[True, True, False, False]]
    assert (_filter(scores, Sampling(True, 1.0, min_p=0.5)) > low).tolist() == [[True, True, False, False]]
    assert (_filter(scores, Sampling(True, 1.0, top_p=0.01)) > low).sum() == 1  # the top token always stays


def test_unsupported_settings_fall_back(model, tok):
    from transformers import GenerationConfig

    from seal_trl.play.rollout import hf_generate_fn

    assert engine_unsupported(model, GenerationConfig(do_sample=True, temperature=0.5, top_k=5)) == []
    assert engine_unsupported(model, GenerationConfig(repetition_penalty=1.2)) == ["repetition_penalty"]
    fallback = hf_generate_fn(model, tok, GenerationConfig(repetition_penalty=1.2, max_new_tokens=4))
    assert not isinstance(fallback, KVCacheEngine)


def test_evaluation_sees_the_token_ids_training_sees(model, tok):
    """The same episodes played by ``evaluate`` with HFBatchAgent and by the training rollout: every
    turn's full token sequence, as handed to the generator, is identical."""
    from seal_envs.eval import evaluate
    from seal_trl.agent.agents import HFBatchAgent

    class Spy:
        def __init__(self, inner):
            self.inner, self.seen = inner, {}

        def generate_episodes(self, keys, seqs, n):
            for key, seq in zip(keys, seqs):
                self.seen.setdefault(key, []).append(list(seq))
            return self.inner.generate_episodes(keys, seqs, n)

        def release(self, keys):
            self.inner.release(keys)

        def reseed(self, seed):
            self.inner.reseed(seed)

    agent = HFBatchAgent(model, tok, temperature=0.0, max_new_tokens=10, device="cpu")
    agent.generate = Spy(agent.generate)
    indices = [0, 6, 10, 15]  # tasks that take 1, 2, 3 and 4 actions of plain text
    result = evaluate("seal/ToolUse-v0", agent, split="test", indices=indices, batch_size=4,
                      env_kwargs={"max_steps": 4})

    spy = Spy(engine(model, tok))
    rollout = MultiTurnRollout(tok, spy, max_episode_steps=4, max_new_tokens=10)
    envs = [gym.make("seal/ToolUse-v0", split="test", evaluation=True, max_steps=4) for _ in indices]
    results = rollout.run(envs, [0] * len(indices), [{"split": "test", "index": i} for i in indices])

    trained = [spy.seen[k] for k in sorted(spy.seen)]
    evaluated = [agent.generate.seen[slot] for slot in range(len(indices))]
    assert [len(t) for t in trained] == [e["actions"] for e in result.episodes]
    assert len({len(t) for t in trained}) > 1  # episodes of different lengths
    assert evaluated == trained
    for res, turns in zip(results, trained):
        assert turns[-1] == (res.prompt_ids + res.completion_ids)[: len(turns[-1])]
