"""seal_envs.eval: pass^k against hand-computed values, the tables, lockstep batching, agents."""

import math

import pytest

import seal_envs  # noqa: F401
from seal_envs.agents import OracleAgent, RandomAgent
from seal_envs.eval import EvalResult, evaluate, make_agent, pass_at_k, pass_hat_k, task_pass_hat_k


# -- pass^k ----------------------------------------------------------------------------------
@pytest.mark.parametrize("n, c, k, expected", [
    (4, 2, 1, 0.5),          # pass^1 is the success rate
    (4, 2, 2, 1 / 6),        # C(2,2)/C(4,2) = 1/6
    (4, 3, 2, 3 / 6),        # C(3,2)/C(4,2) = 3/6
    (5, 3, 2, 3 / 10),       # C(3,2)/C(5,2) = 3/10
    (8, 8, 8, 1.0),
    (8, 7, 8, 0.0),          # one failure among 8: pass^8 is 0
    (3, 0, 1, 0.0),
])
def test_pass_hat_k_hand_values(n, c, k, expected):
    assert pass_hat_k(n, c, k) == pytest.approx(expected)
    assert pass_hat_k(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k))


def test_pass_at_k_is_the_optimistic_dual():
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)   # 1 - C(3,2)/C(4,2)
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 1, 4) == 1.0
    for n, c, k in [(4, 2, 2), (6, 3, 3), (5, 5, 1)]:
        assert pass_hat_k(n, c, k) <= c / n <= pass_at_k(n, c, k)


@pytest.mark.parametrize("n, c, k", [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_hat_k_rejects_impossible_counts(n, c, k):
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_task_average():
    outcomes = {"a": [True, True, False, False], "b": [True] * 4, "c": [False] * 4}
    assert task_pass_hat_k(outcomes, 1) == pytest.approx((0.5 + 1 + 0) / 3)
    assert task_pass_hat_k(outcomes, 2) == pytest.approx((1 / 6 + 1 + 0) / 3)
    assert task_pass_hat_k(outcomes, 4) == pytest.approx(1 / 3)


# -- the result tables -----------------------------------------------------------------------
def _episode(task, domain, trial, passed, labels):
    return {"task_id": task, "index": 0, "domain": domain, "difficulty": 1, "trial": trial, "seed": trial,
            "reward": float(passed), "passed": passed, "progress": float(passed), "actions": len(labels),
            "labels": labels, "failed_checks": []}


def test_result_tables_hand_computed():
    eps = [
        _episode("bank/1", "bank", 0, True, ["ok", "ok"]),
        _episode("bank/1", "bank", 1, False, ["ok", "missing_call"]),
        _episode("shop/1", "shop", 0, True, ["ok"]),
        _episode("shop/1", "shop", 1, True, ["ok"]),
        _episode("shop/2", "shop", 0, False, ["format_error", "format_error", "premature_end"]),
        _episode("shop/2", "shop", 1, False, ["schema_violation"]),
    ]
    r = EvalResult("seal/ToolUse-v0", "x", "test", k=2, n=2, seed=0, episodes=eps)
    assert r.num_tasks == 3 and r.success_rate == pytest.approx(3 / 6)
    # per task pass^2: bank/1 C(1,2)=0, shop/1 1, shop/2 0 -> 1/3
    assert r.pass_hat_k == pytest.approx(1 / 3)
    assert r.pass_hat_curve() == {1: pytest.approx((0.5 + 1 + 0) / 3), 2: pytest.approx(1 / 3)}
    dom = r.per_domain()
    assert dom["bank"]["success_rate"] == 0.5 and dom["bank"]["pass^2"] == 0.0
    assert dom["shop"]["tasks"] == 2 and dom["shop"]["pass^2"] == pytest.approx(0.5)
    lab = r.per_label()
    assert list(lab) == ["ok", "format_error", "schema_violation", "missing_call", "premature_end"]  # LABELS order
    assert lab["ok"]["steps"] == 5 and lab["ok"]["fraction"] == pytest.approx(5 / 10)
    assert lab["format_error"]["steps"] == 2 and lab["format_error"]["episodes"] == 1
    assert lab["ok"]["episodes"] == 4 and lab["ok"]["episodes_passed"] == 3
    assert lab["missing_call"]["official_tag"] == "state_mismatch"
    md = r.to_markdown()
    assert "| pass^2 | 0.3333 |" in md and "| shop | 2 | 4 | 0.5000 | 0.5000 |" in md
    again = EvalResult.from_dict(r.to_dict())
    assert again.to_dict() == r.to_dict()


# -- evaluate --------------------------------------------------------------------------------
@pytest.mark.parametrize("split", ["train", "test", "ood"])
def test_oracle_is_perfect_on_every_split(split):
    r = evaluate("seal/ToolUse-v0", make_agent("oracle"), split=split, k=2, limit=6, agent_name="oracle")
    assert len(r.episodes) == 12 and r.num_tasks == 6
    assert r.success_rate == 1.0 and r.pass_hat_k == 1.0
    assert set(r.per_label()) == {"ok"}
    assert {e["task_id"].split("/")[1] for e in r.episodes} == {split}


def test_trials_share_the_task_and_differ_in_seed():
    r = evaluate("seal/ToolUse-Bank-v0", make_agent("random"), split="test", k=2, n=3, limit=2, seed=10)
    assert len(r.episodes) == 6
    for index in (0, 1):
        eps = [e for e in r.episodes if e["index"] == index]
        assert len({e["task_id"] for e in eps}) == 1
        assert [e["seed"] for e in eps] == [10, 11, 12] and [e["trial"] for e in eps] == [0, 1, 2]


def test_flaky_agent_gives_the_hand_computed_pass_hat_k():
    """Solves every task on even seeds only: n=4 trials -> c=2 per task."""
    factory = lambda seed: OracleAgent() if seed % 2 == 0 else RandomAgent(seed, answer_prob=1.0)  # noqa: E731
    r = evaluate("seal/ToolUse-v0", factory, split="test", k=2, n=4, limit=3)
    assert r.success_rate == 0.5
    assert r.pass_hat(1) == pytest.approx(0.5)
    assert r.pass_hat(2) == pytest.approx(1 / 6)
    assert r.pass_hat(3) == 0.0


class RecordingBatchAgent:
    """Oracle answers, but through the batch interface; records every round's batch."""

    def __init__(self):
        self.rounds, self.starts = [], []

    def start(self, seeds):
        self.starts.append(list(seeds))
        self.oracles = [OracleAgent() for _ in seeds]

    def act_batch(self, envs, infos, slots):
        self.rounds.append(list(slots))
        return [self.oracles[s].act(e, i) for e, i, s in zip(envs, infos, slots)]


def test_episodes_run_in_lockstep_batches():
    agent = RecordingBatchAgent()
    r = evaluate("seal/ToolUse-v0", agent, split="test", k=1, n=2, limit=3, batch_size=4)
    assert r.success_rate == 1.0 and len(r.episodes) == 6
    assert agent.starts == [[0, 1, 0, 1], [0, 1]]                 # 6 episodes in batches of 4 and 2
    first_batch = agent.rounds[:max(e["actions"] for e in r.episodes[:4])]
    assert first_batch[0] == [0, 1, 2, 3]                         # round 1: every episode at once
    for a, b in zip(first_batch, first_batch[1:]):
        assert set(b) <= set(a)                                   # finished episodes drop out
    assert len(agent.rounds) == (max(e["actions"] for e in r.episodes[:4])
                                 + max(e["actions"] for e in r.episodes[4:]))


def test_evaluate_rejects_bad_arguments():
    with pytest.raises(ValueError):
        evaluate("seal/ToolUse-v0", make_agent("oracle"), k=3, n=2, limit=1)
    with pytest.raises(ValueError):
        make_agent("gpt-4")
    with pytest.raises(ValueError):
        make_agent("openai:not-a-url#m")


def test_save_writes_json_and_markdown(tmp_path):
    r = evaluate("seal/ToolUse-v0", make_agent("oracle"), split="test", k=1, limit=2, agent_name="oracle")
    paths = r.save(tmp_path)
    import json

    data = json.loads(paths["json"].read_text())
    assert data["summary"]["success_rate"] == 1.0 and data["summary"]["pass^1"] == 1.0
    assert len(data["episodes"]) == 2 and set(data["per_task"]) == {e["task_id"] for e in r.episodes}
    assert paths["markdown"].read_text() == r.to_markdown()


@pytest.mark.parametrize("kind", ["oracle", "random", "batch"])
def test_eval_json_episodes_carry_their_transcripts(tmp_path, kind):
    """Every episode of eval.json keeps the conversation as its agent saw it (the final
    info["messages"]), whatever the agent; eval.md keeps only the tables."""
    import json

    agent = {"oracle": make_agent("oracle"), "random": make_agent("random"), "batch": RecordingBatchAgent()}[kind]
    r = evaluate("seal/ToolUse-v0", agent, split="test", k=1, n=2, limit=3, batch_size=4, agent_name=kind)
    paths = r.save(tmp_path)
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert [e["transcript"] for e in data["episodes"]] == [e["transcript"] for e in r.episodes]
    import gymnasium as gym

    env = gym.make("seal/ToolUse-v0", split="test", evaluation=True)
    for e in data["episodes"]:
        transcript = e["transcript"]
        _, first = env.reset(seed=e["seed"], options={"split": "test", "index": e["index"]})
        assert transcript[:len(first["new_messages"])] == first["new_messages"]  # starts as the episode started
        assert [m["role"] for m in transcript[:2]] == ["system", "user"]
        assert sum(m["role"] == "assistant" for m in transcript) == e["actions"] > 0  # one per action
        assert sum(m["role"] == "user" for m in transcript) >= 1
        if kind != "random":  # the oracle's calls and their results are in it
            calls = [c["function"]["name"] for m in transcript if m["role"] == "assistant" for c in m.get("tool_calls", [])]
            assert calls == [m["name"] for m in transcript if m["role"] == "tool"]
    episodes = data["episodes"]
    assert len({json.dumps(e["transcript"]) for e in episodes if e["trial"] == 0}) == 3  # each task its own
    markdown = paths["markdown"].read_text(encoding="utf-8")
    assert markdown == r.to_markdown() and "transcript" not in markdown
    assert not any(m["content"] in markdown for e in episodes for m in e["transcript"] if len(m["content"] or "") > 20)


def test_a_transcript_with_a_lone_surrogate_is_saved_and_read_back(tmp_path):
    """A model server may send "\ud800" (valid JSON, not encodable as UTF-8): eval.json is still
    written, as UTF-8, and reads back to the same transcript."""
    import json

    class Says:
        def reset(self):
            pass

        def act(self, env, info):
            return "caf\u00e9 \ud800 done"

    r = evaluate("seal/ToolUse-Bank-v0", lambda seed: Says(), split="test", limit=1)
    assert r.episodes[0]["transcript"][2] == {"role": "assistant", "content": "caf\u00e9 \ud800 done"}
    paths = r.save(tmp_path)
    raw = paths["json"].read_bytes()
    raw.decode("utf-8")  # strict: the file is UTF-8
    assert "café".encode() in raw  # other text stays readable, not escaped
    assert EvalResult.from_dict(json.loads(raw)).episodes == r.episodes


def test_hf_tiny_agent_one_generate_call_per_round():
    """``--agent hf:tiny``: the CLI's options reach the agent; every round is one generate call."""
    pytest.importorskip("torch")
    from seal_trl.agent.agents import HFBatchAgent
    from seal_trl.agent.agents import make_agent as make_any_agent

    agent = make_any_agent("hf:tiny", temperature=None, max_new_tokens=4, max_tokens=4, device="cpu")
    assert isinstance(agent, HFBatchAgent) and agent.name == "hf:tiny" and agent.max_new_tokens == 4
    r = evaluate("seal/ToolUse-v0", agent, split="test", k=1, n=2, limit=2, batch_size=4, seed=3)
    assert len(r.episodes) == 4
    # one generate call per lockstep round: the longest episode of the only batch
    assert agent.generate_calls == max(e["actions"] for e in r.episodes)
    for e in r.episodes:
        assert len(e["labels"]) == e["actions"]


def test_progress_starts_at_zero_and_ends_at_the_total():
    """A progress bar starts before the first batch runs, so its rate and ETA count that batch too."""
    from seal_envs.eval import evaluate, make_agent

    calls = []
    evaluate("seal/ToolUse-Bank-v0", make_agent("oracle"), limit=5, batch_size=2, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, 5), (2, 5), (4, 5), (5, 5)]
