"""The copies issue 16 put in place of ``copy.deepcopy``: equal, independent, sharing kept."""

import collections
import copy
import pickle
import random

import pytest

from seal_envs.core.datacopy import Snapshot, deep_copy, deep_copy_objects

PLAIN = {"a": [1, 2.5, -0.0, float("nan"), True, None, "\u00e9\ud800"], "b": {"c": (1, 2), "d": {3, 4}},
         "big": 10**40, "e": frozenset({"x"})}


def same(a, b) -> bool:
    return pickle.dumps(a) == pickle.dumps(b)  # type for type, NaN and -0.0 included


@pytest.mark.parametrize("copier", [deep_copy, deep_copy_objects, lambda v: Snapshot(v).restore()])
def test_copies_equal_independent_and_keep_sharing(copier):
    shared = [1]
    value = dict(PLAIN, s1=shared, s2=shared)
    out = copier(value)
    assert same(out, copy.deepcopy(value))
    assert out["s1"] is out["s2"] and out["s1"] is not shared
    out["a"].append(9)
    assert value["a"][-1] != 9


def test_what_marshal_refuses_falls_back_to_deepcopy():
    value = {"od": collections.OrderedDict(a=1), "rng": random.Random(3)}
    for out in (deep_copy(value), deep_copy_objects(value), Snapshot(value).restore()):
        assert type(out["od"]) is collections.OrderedDict and out["rng"].random() == random.Random(3).random()
    snap = Snapshot(value)
    first, second = snap.restore(), snap.restore()
    assert first["od"] is not second["od"]


def test_shared_tool_snapshots_give_fresh_copies_and_pickle():
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"enum": ["a", "b"], "n": 1.5}}}]
    frozen = Snapshot(tools)
    one, two = frozen.restore(), frozen.restore()
    assert one == two == tools and one is not two and one[0]["function"] is not two[0]["function"]
    one[0]["function"]["name"] = "changed"
    assert frozen.restore() == tools
    assert pickle.loads(pickle.dumps(frozen)).restore() == tools


def test_an_env_mid_episode_pickles_and_deep_copies():
    import gymnasium as gym

    import seal_envs  # noqa: F401
    from seal_envs.agents import OracleAgent

    env = gym.make("seal/ToolUse-v0")
    _, info = env.reset(seed=1)
    action = OracleAgent().act(env, info)
    envs = (pickle.loads(pickle.dumps(env)), copy.deepcopy(env), env)
    steps = [e.step(action) for e in envs]
    assert steps[0][0] == steps[1][0] == steps[2][0] and steps[0][4] == steps[1][4] == steps[2][4]
    assert envs[0].unwrapped.messages == envs[1].unwrapped.messages == envs[2].unwrapped.messages
