"""The episode state object: one made per reset, restored whole by a failed step."""

from dataclasses import fields

import gymnasium as gym
import pytest

import seal_envs  # noqa: F401
from seal_envs import env as env_module
from seal_envs.core.frozen import FrozenList
from seal_envs.core.verifier import EpisodeRecord
from seal_envs.episode import _LISTS, _RECORD_LISTS, Episode

CALL = '<tool_call>{"name": "list_accounts", "arguments": {"customer_id": "C-1"}}</tool_call>'


def test_a_checkpoint_covers_every_container_of_the_episode():
    """A list or set field added to Episode or EpisodeRecord and not to the checkpoint fails here."""
    env = gym.make("seal/ToolUse-Bank-v0").unwrapped
    env.reset(seed=0)
    env.step(CALL)
    ep = env._episode
    lists = {f.name for f in fields(Episode)  # a read-only list (the tools last reported) needs no checkpoint
             if isinstance(getattr(ep, f.name), list) and not isinstance(getattr(ep, f.name), FrozenList)}
    sets = {f.name for f in fields(Episode) if isinstance(getattr(ep, f.name), set)}
    assert lists == set(_LISTS) and sets == {"available"}
    record_lists = {f.name for f in fields(EpisodeRecord) if isinstance(getattr(ep.record, f.name), list)}
    assert record_lists == set(_RECORD_LISTS)
    assert {f.name for f in fields(EpisodeRecord)} == record_lists | {"guessed_withheld"}


def _state(ep: Episode) -> dict:
    """Every field's value, containers copied, the record's too: what a restore must give back."""
    out = {f.name: list(v) if isinstance(v := getattr(ep, f.name), list) else set(v) if isinstance(v, set) else v
           for f in fields(Episode) if f.name not in ("record", "_messages_view", "backend")}
    out["record"] = {f.name: type(getattr(ep.record, f.name))(getattr(ep.record, f.name)) for f in fields(EpisodeRecord)}
    out["backend_state"] = ep.backend.comparable_state()
    return out


def _played(env, actions):
    env.reset(seed=4)
    infos = [env.step(a)[4] for a in actions]
    return infos


# Where a step can fail after it has changed the episode: running a call, writing its feedback,
# closing a user turn, verifying and diagnosing the end.
FAILURES = {
    "feedback": lambda monkeypatch, env: monkeypatch.setattr(env, "_feedback", _boom),
    "close_turn": lambda monkeypatch, env: monkeypatch.setattr(env.backend, "comparable_state", _boom),
    "verify": lambda monkeypatch, env: monkeypatch.setattr(type(env.task_set), "verify", _boom),
    "diagnose": lambda monkeypatch, env: monkeypatch.setattr(env_module, "diagnose", _boom),
    "info": lambda monkeypatch, env: monkeypatch.setattr(env_module, "immediate_label", _boom),
}


def _boom(*args, **kwargs):
    raise KeyboardInterrupt("interrupted mid-step")


@pytest.mark.parametrize("where", FAILURES)
def test_a_step_interrupted_anywhere_leaves_the_episode_as_it_was(where, monkeypatch):
    """The interrupted step changes nothing: the episode's fields, its record and the backend's
    state are what they were, and the rest of the episode plays as if it never happened."""
    from seal_envs.agents import OracleAgent

    env = gym.make("seal/ToolUse-Bank-v0").unwrapped
    _, info = env.reset(seed=4)
    agent, actions, done = OracleAgent(), [], False
    while not done:  # the oracle's whole episode, to replay
        actions.append(agent.act(env, info))
        _, _, terminated, truncated, info = env.step(actions[-1])
        done = terminated or truncated
    expected = _played(env, actions)

    interrupted = 0
    for k, action in enumerate(actions):  # fail each step once where it passes that point, then take it
        env.reset(seed=4)
        for a in actions[:k]:
            env.step(a)
        before = _state(env._episode)
        with monkeypatch.context() as m:
            FAILURES[where](m, env)
            try:
                env.step(action)
            except KeyboardInterrupt:
                interrupted += 1
            else:
                continue  # this step does not pass that point
        assert _state(env._episode) == before, (where, k)
        infos = [env.step(a)[4] for a in actions[k:]]
        assert infos == expected[k:], (where, k)
    assert interrupted, f"no step of the episode reached {where}"


def test_each_reset_makes_a_new_episode():
    env = gym.make("seal/ToolUse-Bank-v0").unwrapped
    env.reset(seed=0)
    first = env._episode
    env.reset(seed=0)
    assert env._episode is not first and env._episode.messages is not first.messages
    assert env.messages == first.conversation()  # same seed, same conversation


def test_a_diagnoser_or_verifier_that_changes_what_it_is_given_and_raises_changes_nothing():
    """They may be the user's: they get copies, so the rollback (which truncates lists) holds
    even when they empty or overwrite a list before raising."""
    def clearing_diagnoser(task, steps, verdict, specs):
        steps.clear() if isinstance(steps, list) else None
        raise ZeroDivisionError("the user's diagnoser failed")

    env = gym.make("seal/ToolUse-Bank-v0", max_steps=2, diagnoser=clearing_diagnoser).unwrapped
    env.reset(seed=0)
    env.step("<tool_call>{bad</tool_call>")
    before = _state(env._episode)
    with pytest.raises(ZeroDivisionError):
        env.step("<tool_call>{bad</tool_call>")  # the budget ends the episode: diagnosis runs
    assert _state(env._episode) == before and len(env.steps) == 1

    class ClearingSet(type(env.task_set)):
        def verify(self, task, record):
            record.turn_states.clear()
            record.turn_answers.append("changed")
            raise ZeroDivisionError("the user's verifier failed")

    env = gym.make("seal/ToolUse-Bank-v0").unwrapped
    env.task_set = ClearingSet(**{f.name: getattr(env.task_set, f.name) for f in fields(env.task_set)})
    env.reset(seed=0)
    action = "Done."
    before = _state(env._episode)
    while True:  # answer until the episode would end, then check the failed last step
        before = _state(env._episode)
        try:
            env.step(action)
        except ZeroDivisionError:
            break
    assert _state(env._episode) == before


@pytest.mark.parametrize("domain", ["bank", "files"])
def test_plain_messages_are_what_thaw_gives_for_every_message_the_env_makes(domain):
    """``plain_messages`` copies the shapes ``message`` makes without walking them in Python; on
    every message of episodes with calls, errors (a bad call, a malformed one, an unknown tool)
    and answers, it equals ``thaw``, is plain data all through and shares nothing mutable."""
    import json

    from seal_envs.agents import OracleAgent
    from seal_envs.core.frozen import FrozenDict, thaw
    from seal_envs.episode import plain_messages

    def plain_all_through(value):
        if isinstance(value, dict):
            return type(value) is dict and all(plain_all_through(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return type(value) is list and all(plain_all_through(v) for v in value)
        return True

    env = gym.make("seal/ToolUse-v0", domains=(domain,)).unwrapped
    stumbles = ['<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>', "<tool_call>{oops</tool_call>",
                [{"name": "a", "arguments": {"x": [1, {"y": "é"}]}}, {"name": "b", "arguments": {}}]]
    kinds = set()
    for seed in range(6):
        agent, done = OracleAgent(), False
        _, info = env.reset(seed=seed)
        env.step(stumbles[seed % 3])
        while not done:
            *_, terminated, truncated, info = env.step(agent.act(env, info))
            done = terminated or truncated
        messages = env.messages
        plain = plain_messages(messages)
        assert json.dumps(plain) == json.dumps(thaw(messages)) and plain == thaw(messages)
        assert plain_all_through(plain) and plain is not plain_messages(messages)
        for m, p in zip(messages, plain):
            assert type(m) is FrozenDict and p is not m
            if "tool_calls" in m:
                assert p["tool_calls"][0] is not m["tool_calls"][0]
                assert p["tool_calls"][0]["function"] is not m["tool_calls"][0]["function"]
            kinds.add((m["role"], "tool_calls" in m))
        assert info["messages"] == plain
    assert {("system", False), ("user", False), ("assistant", True), ("assistant", False), ("tool", False)} <= kinds
