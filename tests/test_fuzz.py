"""Hostile actions against ``env.step`` on every registered id, as text and as message dicts.

Whatever the model sends, a step must: raise nothing, return a labelled turn, leave the episode
unchanged when it rejects the action (a ``format_error``: no call ran, the turn did not move),
and take bounded time. The strategies lean on what broke before: numbers past the int-string
limit, NaN and infinities, deep nesting, non-string keys, sets, bytes, circular structures,
oversized actions and call lists, BFCL's Python syntax and ``0x`` literals.

Budget: about 30 s in all (``EXAMPLES`` per id and kind, no deadline; the time bound is asserted
per step instead, generous enough for a loaded CI machine).
"""

import copy
import json
import time

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seal_envs
from seal_envs.core.calls import MAX_ACTION_CHARS, MAX_CALLS

IDS = seal_envs.registered_ids()
EXAMPLES = 50
STEP_SECONDS = 2.0
_ENVS: dict[str, gym.Env] = {}


def env_for(env_id: str):
    if env_id not in _ENVS:
        _ENVS[env_id] = gym.make(env_id, max_steps=4).unwrapped
    return _ENVS[env_id]


def _circular() -> dict:
    d: dict = {"name": "x", "arguments": {}}
    d["arguments"]["self"] = d
    return d


def _nested(depth: int, leaf=1):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


numbers = st.one_of(
    st.integers(), st.floats(), st.sampled_from([float("nan"), float("inf"), -float("inf"), -(2**300), 2**256]),
    st.builds(lambda: 10**5000),  # built, not listed: hypothesis cannot even repr it
)
leaves = st.none() | st.booleans() | numbers | st.text(max_size=12)
json_like = st.recursive(leaves, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                         max_leaves=8)
hostile = st.one_of(  # values no JSON parser returns: only a dict action can carry them
    st.sets(st.integers(), max_size=3), st.binary(max_size=8), st.tuples(st.integers()),
    st.dictionaries(st.integers(), st.integers(), min_size=1, max_size=2),
    st.builds(_circular), st.integers(50, 3000).map(_nested),
)


@st.composite
def text_actions(draw, tools: list[str], params: list[str]):
    name = draw(st.sampled_from(tools) | st.text(max_size=10))
    args = draw(st.dictionaries(st.sampled_from(params) | st.text(max_size=5), json_like, max_size=3))
    try:
        call = json.dumps({"name": name, "arguments": args})
    except ValueError:  # an int past the digit limit cannot even be written by json.dumps
        call = '{"name": "%s", "arguments": {"x": %s}}' % (name, "9" * 5000)
    param = draw(st.sampled_from(params))
    return draw(st.one_of(
        st.text(max_size=80),
        st.just(call), st.just(f"<tool_call>{call}</tool_call>"), st.just(f"[{call}]"),
        st.just(f"Sure.\n<tool_call>{call}</tool_call>\n<tool_call>{call}"),
        st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "9" * 5000]).map(
            lambda n: '{"name": "%s", "arguments": {"%s": %s}}' % (name, param, n)),
        st.sampled_from(["0x" + "f" * 2000, "1e999", "-" * 600 + "1", "[" * 300 + "]" * 300, "{1: 2}", "{1, 2}"]).map(
            lambda n: f"{name}({param}={n})"),
        st.integers(1, 5000).map(lambda k: "[" * k + "]" * k),
        st.integers(1, 5000).map(lambda k: '{"name": "x", "arguments": ' + '{"a": ' * k + "1" + "}" * (k + 1)),
        st.just(f"[{', '.join([call] * (MAX_CALLS + 1))}]"),
        st.just(f"<tool_call>{call}</tool_call>" * (MAX_CALLS + 1)),
        st.just("x" * (MAX_ACTION_CHARS + 1)), st.just(call + " " * (5 << 20)),
    ))


@st.composite
def dict_actions(draw, tools: list[str], params: list[str]):
    name = draw(st.sampled_from(tools) | st.text(max_size=10))
    args = draw(st.dictionaries(st.sampled_from(params) | st.text(max_size=5), json_like | hostile, max_size=3))
    arguments = draw(st.just(args) | st.text(max_size=40) | st.just("{" * 5000) | st.just('{"x": ' + "9" * 5000 + "}"))
    call = draw(st.sampled_from([{"function": {"name": name, "arguments": arguments}},
                                 {"name": name, "arguments": arguments}, {"id": 1, "type": "function"}]))
    content = draw(st.none() | st.text(max_size=40) | leaves | hostile)
    calls = draw(st.lists(st.just(call), max_size=3) | st.just([call] * (MAX_CALLS + 1)) | hostile | leaves)
    msg = {"role": "assistant", "content": content, "tool_calls": calls}
    return draw(st.just(msg) | st.just({**msg, draw(st.integers() | st.binary(max_size=4)): 1}) | hostile | leaves
                | st.just({"content": "x" * (MAX_ACTION_CHARS + 1)}))


def _snapshot(env):
    return (json.dumps(env.backend.comparable_state(), sort_keys=True, default=str), env.user_turn, env._episode.revealed,
            sorted(env.available), len(env.steps), copy.deepcopy(env.record.turn_states))


def check_step(env, seed: int, action) -> None:
    env.reset(seed=seed)
    before = _snapshot(env)
    n_messages = len(env.messages)
    start = time.perf_counter()
    obs, reward, terminated, truncated, info = env.step(action)
    elapsed = time.perf_counter() - start
    assert elapsed < STEP_SECONDS, f"a step took {elapsed:.1f} s"
    assert env.observation_space.contains(obs)
    assert info["step_label"]["label"] in seal_envs.LABELS
    assert len(env.steps) == before[4] + 1
    if info["step_label"]["label"] == "format_error":
        after = _snapshot(env)
        assert after[:4] == before[:4] and after[5] == before[5], "a rejected action changed the episode"
        assert len(env.messages) == n_messages + 2  # the action as sent (bounded) and the feedback
        assert all(len(m.get("content") or "") <= MAX_ACTION_CHARS + 64 for m in env.messages[n_messages:])
    if terminated or truncated:
        assert "verdict" in info and len(info["step_labels"]) == len(env.steps)


def _tools_and_params(env_id: str) -> tuple[list[str], list[str]]:
    env = env_for(env_id)
    env.reset(seed=0)
    tools = sorted(env.specs)
    params = sorted({p for s in env.specs.values() for p in s.parameters.get("properties", {})}) or ["x"]
    return tools, params


@pytest.mark.parametrize("env_id", IDS)
@pytest.mark.parametrize("kind", ["text", "dict"])
def test_any_action_is_a_labelled_turn(env_id, kind):
    tools, params = _tools_and_params(env_id)
    strategy = (text_actions if kind == "text" else dict_actions)(tools, params)

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(seed=st.integers(0, 20), action=strategy)
    def run(seed, action):
        check_step(env_for(env_id), seed, action)

    run()


def test_the_fuzz_suite_covers_every_registered_id():
    assert len(IDS) >= 7 and all(i.startswith("seal/") for i in IDS)
