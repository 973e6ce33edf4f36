"""The official per-user-turn tags: the rules on hand-built facts, and native-domain episodes of
every tag the native verifier can produce."""

import dataclasses
import json

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401  (registers the ids)
from seal_envs.agents import OracleAgent
from seal_envs.core import verifier
from seal_envs.core.official import (
    CHECK_ERROR, CHECK_FAIL, OFFICIAL_TAGS, TurnFacts, guarded, official_score, official_tag_of_turn,
)
from seal_envs.tasks import default_task_set

F = TurnFacts


@pytest.mark.parametrize("facts, tag", [
    (F(False, 2), "pass"),
    (F(True, 0), "correct_abstention"),
    (F(True, 1), "spurious_tool_call"),
    (F(False, 0), "empty_turn_model_response"),
    (F(False, 1, instances_match=False), "instance_mismatch"),
    (F(False, 1, state=CHECK_FAIL), "state_mismatch"),
    (F(False, 1, response=CHECK_FAIL), "response_mismatch"),
    (F(False, 1, state=CHECK_ERROR), "checker_error"),
    (F(False, 1, response=CHECK_ERROR), "checker_error"),
    (F(False, 1, gt_error=True), "gt_error"),
    # the first rule that applies wins
    (F(True, 3, gt_error=True), "gt_error"),
    (F(True, 1, state=CHECK_FAIL), "spurious_tool_call"),
    (F(False, 0, instances_match=False, state=CHECK_FAIL), "empty_turn_model_response"),
    (F(False, 1, instances_match=False, state=CHECK_ERROR), "instance_mismatch"),
    (F(False, 1, state=CHECK_FAIL, response=CHECK_ERROR), "state_mismatch"),
    (F(False, 1, state=CHECK_ERROR, response=CHECK_FAIL), "checker_error"),
])
def test_rules_in_order(facts, tag):
    assert official_tag_of_turn(facts) == tag


def test_every_tag_is_reachable_and_progress_counts_scorable_turns():
    facts = [F(False, 2), F(True, 0), F(True, 1), F(False, 0), F(False, 1, instances_match=False),
             F(False, 1, state=CHECK_FAIL), F(False, 1, response=CHECK_FAIL), F(False, 1, state=CHECK_ERROR),
             F(False, 1, gt_error=True)]
    score = official_score(facts)
    assert set(score.tags) == set(OFFICIAL_TAGS)
    assert (score.passed_turns, score.scorable_turns) == (1, 7)  # abstention turns are not scorable
    assert score.progress == pytest.approx(1 / 7)
    assert official_score([F(True, 0)]).progress == 0.0  # nothing scorable
    assert official_score([]).tags == ()


def test_guarded_turns_exceptions_into_messages():
    assert guarded(lambda: 3) == (3, "")
    assert guarded(lambda: 1 / 0) == (None, "ZeroDivisionError: division by zero")


# -- native domains --------------------------------------------------------------------------
def _task_with(predicate):
    ts = default_task_set("train")
    return next(ts[i] for i in range(len(ts)) if predicate(ts[i]))


def _oracle_episode(env, task, stop_turn=None, answer=None):
    """The oracle's actions, with turn ``stop_turn`` answered by ``answer`` instead of its calls."""
    obs, info = env.reset(options={"task": task})
    agent = OracleAgent()
    agent.reset()
    while True:
        action = answer if stop_turn is not None and env.user_turn == stop_turn else agent.act(env, info)
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info


def test_native_oracle_passes_every_turn_and_abstains_where_no_call_is_due():
    env = gym.make("seal/ToolUse-v0").unwrapped
    task = _task_with(lambda t: len(t.turns) > 1 and any(not u.plan for u in t.turns))
    reward, info = _oracle_episode(env, task)
    assert reward == 1.0
    expected = ["correct_abstention" if not u.plan else "pass" for u in task.turns]
    assert info["official_turn_tags"] == expected
    assert info["official_progress"] == 1.0


def test_native_spurious_call_empty_turn_and_unreached_turns():
    env = gym.make("seal/ToolUse-v0").unwrapped
    task = _task_with(lambda t: t.turns[0].plan and any(not u.plan for u in t.turns[1:]))
    env.reset(options={"task": task})
    _, info = env.force_end()
    assert info["official_turn_tags"] == ["correct_abstention" if not u.plan else "empty_turn_model_response"
                                     for u in task.turns]
    assert info["official_progress"] == 0.0
    # a call in the turn that needs none (the oracle everywhere else)
    empty = next(k for k, u in enumerate(task.turns) if not u.plan)
    obs, info = env.reset(options={"task": task})
    agent = OracleAgent()
    agent.reset()
    called = False
    while True:
        if env.user_turn == empty and not called:
            action, called = _call(task.turns[0].plan[0]), True
        else:
            action = agent.act(env, info)
        _, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert info["official_turn_tags"][empty] == "spurious_tool_call"
    assert info["official_progress"] == 1.0  # not scorable: the other turns passed


def _call(call):
    return f'<tool_call>{json.dumps({"name": call.name, "arguments": dict(call.arguments)})}</tool_call>'


def test_native_state_and_response_mismatch():
    env = gym.make("seal/ToolUse-v0").unwrapped

    def fits(t):
        specs = env.task_set.backend_for(t).tool_specs()
        plan = t.turns[0].plan
        return len(t.turns) == 1 and len(plan) >= 2 and specs[plan[-1].name].writes and t.turns[0].required_outputs

    task = _task_with(fits)
    env.reset(options={"task": task})
    for call in task.turns[0].plan[:-1]:  # the last call, a write, never made
        env.step(_call(call))
    _, _, _, _, info = env.step("Done.")
    assert info["official_turn_tags"] == ["state_mismatch"]
    env.reset(options={"task": task})
    for call in task.turns[0].plan:  # every call, then an answer without what the user asked
        env.step(_call(call))
    _, _, _, _, info = env.step("Done.")
    assert [c["name"] for c in info["verdict"]["checks"] if not c["passed"]] == ["response_turn_0"]
    assert info["official_turn_tags"] == ["response_mismatch"]


def test_native_gt_error_and_checker_error(monkeypatch):
    env = gym.make("seal/ToolUse-v0").unwrapped
    task = _task_with(lambda t: len(t.turns) > 1 and all(u.plan for u in t.turns))
    backend_cls = env.task_set.backend_for(task)
    real = backend_cls.execute
    reference_calls = {"n": 0}

    def raises_in_the_reference_of_turn_1(self, call, available=None):
        if available is None:  # the reference replay passes no availability; the agent's calls do
            reference_calls["n"] += 1
            if reference_calls["n"] == len(task.turns[0].plan) + 1:
                raise RuntimeError("reference broke")
        return real(self, call, available) if available is not None else real(self, call)

    monkeypatch.setattr(backend_cls, "execute", raises_in_the_reference_of_turn_1)
    reward, info = _oracle_episode(env, dataclasses.replace(task))
    monkeypatch.undo()
    assert reward == 0.0
    assert info["official_turn_tags"][:2] == ["pass", "gt_error"]
    assert "ground truth raised: RuntimeError: reference broke" in str(info["verdict"]["checks"])

    def broken(*args, **kwargs):
        raise ValueError("checker broke")

    monkeypatch.setattr(verifier, "canonical_json", broken)
    reward, info = _oracle_episode(env, task)
    assert info["official_turn_tags"] == ["checker_error"] * len(task.turns)
    assert reward == 0.0
