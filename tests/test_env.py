"""ToolUseEnv behaviour: verification of mutated oracles, robustness to any action, surfaces."""

import copy
import json
import os

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seal_envs
from seal_envs.agents import OracleAgent, run_episode
from seal_envs.core.types import ToolCall
from seal_envs.core.frozen import thaw
from seal_envs.tasks import TaskSet

BANK = TaskSet(("bank",), "train")


def bank_env(**kw):
    return gym.make("seal/ToolUse-Bank-v0", **kw).unwrapped


def find(pred, ts=BANK):
    for i in range(len(ts)):
        if pred(ts[i]):
            return ts[i]
    raise LookupError("no task matches")


def play(task, mutate=None):
    env = bank_env()
    return run_episode(env, OracleAgent(mutate), options={"task": task})


def failed(info):
    return {c["name"] for c in info["verdict"]["checks"] if not c["passed"]}


def labels(info):
    return [lb["label"] for lb in info["step_labels"]]


def test_oracle_passes_and_labels_ok():
    reward, info, _ = play(BANK[0])
    assert reward == 1.0 and set(labels(info)) == {"ok"} and info["verdict"]["progress"] == 1.0


def test_dropped_call_fails_state_check():
    task = find(lambda t: any(c.name == "transfer" for c in t.turns[0].plan) and t.turns[0].withheld is None)

    def drop(actions, turn, task):
        return [a for a in actions if not (isinstance(a, ToolCall) and a.name == "transfer")] if turn == 0 else actions

    reward, info, _ = play(task, drop)
    assert reward == 0.0 and "state_turn_0" in failed(info)
    assert "missing_call" in labels(info)


def test_changed_argument_fails():
    task = find(lambda t: any(c.name == "transfer" for c in t.turns[0].plan) and t.turns[0].withheld is None)

    def change(actions, turn, task):
        return [ToolCall(a.name, {**a.arguments, "amount": a.arguments["amount"] + 1})
                if isinstance(a, ToolCall) and a.name == "transfer" else a for a in actions]

    reward, info, _ = play(task, change)
    assert reward == 0.0 and "state_turn_0" in failed(info) and "arg_mismatch" in labels(info)


def test_swapped_dependent_calls_fail():
    task = find(lambda t: [c.name for c in t.turns[0].plan][:2] == ["verify_identity", "transfer"]
                and t.turns[0].withheld is None)

    def swap(actions, turn, task):
        if turn == 0:
            calls = [a for a in actions if isinstance(a, ToolCall)]
            return [calls[1], calls[0]] + [a for a in actions if not isinstance(a, ToolCall)]
        return actions

    reward, info, _ = play(task, swap)
    assert reward == 0.0 and {"no_violation_turn_0", "state_turn_0"} <= failed(info)
    first = info["step_labels"][0]
    assert first["label"] == "wrong_order" and first["secondary"] == ["constraint_violation"]


def test_broken_constraint_fails():
    task = find(lambda t: t.template == "trap")
    trap_turn = 1

    def break_rule(actions, turn, task):
        if turn != trap_turn:
            return actions
        cid = task.turns[turn].plan[0].arguments["customer_id"]
        src = next(a for a, v in sorted(task.initial_state["accounts"].items()) if v["owner"] == cid)
        dst = next(a for a in sorted(task.initial_state["accounts"]) if a != src)
        return actions[:1] + [ToolCall("transfer", {"from_account": src, "to_account": dst, "amount": 99999})] + actions[1:]

    reward, info, _ = play(task, break_rule)
    assert reward == 0.0 and f"no_violation_turn_{trap_turn}" in failed(info)
    assert "constraint_violation" in labels(info)


def test_guessing_withheld_value_fails():
    task = find(lambda t: t.turns[0].withheld is not None)

    def guess(actions, turn, task):
        return actions[1:] if turn == 0 else actions  # skip the question, use the PIN anyway

    reward, info, _ = play(task, guess)
    assert reward == 0.0 and "asked_withheld_turn_0" in failed(info)
    assert info["step_labels"][0]["label"] == "spurious_call"


def test_withheld_value_is_revealed_when_asked():
    task = find(lambda t: t.turns[0].withheld is not None)
    env = bank_env()
    env.reset(options={"task": task})
    obs, *_ = env.step("What is your PIN?")
    assert str(task.turns[0].withheld.value) in obs


def test_late_tool_is_unavailable_until_its_turn():
    task = find(lambda t: t.hidden_tools == ("freeze_card",))
    env = bank_env()
    _, info = env.reset(options={"task": task})
    assert "freeze_card" not in {t["function"]["name"] for t in info["tools"]}
    late = next(i for i, t in enumerate(task.turns) if "freeze_card" in t.new_tools)
    card = task.turns[late].plan[-1].arguments["card_id"]
    _, _, _, _, info = env.step(json.dumps({"name": "freeze_card", "arguments": {"card_id": card}}))
    assert info["events"][0]["kind"] == "unavailable_tool" and info["step_label"]["label"] == "spurious_call"


def test_truncation_still_verifies():
    env = bank_env(max_steps=2)
    env.reset(seed=0)
    env.step('{"name": "get_balance", "arguments": {"account_id": "ACC-1001"}}')
    _, reward, terminated, truncated, info = env.step('{"name": "get_balance", "arguments": {"account_id": "ACC-1001"}}')
    assert truncated and not terminated and "verdict" in info and reward == 0.0
    assert len(info["step_labels"]) == 2


def test_progress_reward_counts_turns():
    task = find(lambda t: len(t.turns) >= 2 and t.turns[0].withheld is None and t.turns[-1].plan)

    def drop_last_turn(actions, turn, task):
        return ["I'm done."] if turn == len(task.turns) - 1 else actions

    env = bank_env(reward_mode="progress")
    reward, info, _ = run_episode(env, OracleAgent(drop_last_turn), options={"task": task})
    assert reward == pytest.approx((len(task.turns) - 1) / len(task.turns))


def test_episodes_do_not_share_state():
    env1, env2 = bank_env(), bank_env()
    env1.reset(seed=3)
    env2.reset(seed=3)
    env1.backend.state["accounts"].clear()
    assert env2.backend.state["accounts"] and env1.task.initial_state["accounts"]


def test_evaluation_envs_are_frozen():
    env = gym.make("seal/ToolUse-v0", split="test").unwrapped
    with pytest.raises(seal_envs.FrozenSurfaceError):
        env.apply_patch(seal_envs.SurfacePatch("affordance", "transfer", 1))
    env = gym.make("seal/ToolUse-v0", evaluation=True).unwrapped
    assert env.surface.frozen and env.surface == seal_envs.CANONICAL.freeze()


@pytest.mark.slow
def test_vector_async_matches_sync():
    results = {}
    actions = ["hello", '<tool_call>{"name": "get_balance", "arguments": {"account_id": "ACC-1001"}}</tool_call>',
               "{broken", "Ünïcødé ✓ answer"]
    for mode in ("sync", "async"):
        envs = gym.make_vec("seal/ToolUse-v0", num_envs=4, vectorization_mode=mode)
        obs, _ = envs.reset(seed=[10, 11, 12, 13])
        obs2 = envs.step(actions)[0]
        results[mode] = (tuple(obs), tuple(obs2))
        envs.close()
    assert results["sync"] == results["async"]
    assert all(results["sync"][0]) and any("Error" in o for o in results["sync"][1])


PAYLOAD = "__import__('os').system('touch {path}')"


@pytest.mark.parametrize("position", ["name", "arg", "text", "hermes", "key"])
def test_injection_payloads_never_run(tmp_path, position):
    marker = tmp_path / "pwned"
    p = PAYLOAD.format(path=marker)
    action = {
        "name": json.dumps({"name": p, "arguments": {}}),
        "arg": json.dumps({"name": "get_balance", "arguments": {"account_id": p}}),
        "text": p,
        "hermes": f"<tool_call>{p}</tool_call>",
        "key": json.dumps({"name": "get_balance", "arguments": {p: 1}}),
    }[position]
    env = bank_env()
    env.reset(seed=1)
    env.step(action)
    assert not marker.exists()


TOOL_NAMES = sorted(seal_envs.ToolUseEnv(domains=("bank",)).task_set.backend_for(BANK[0]).tool_specs())
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
                           max_leaves=6)
calls = st.fixed_dictionaries({"name": st.sampled_from(TOOL_NAMES) | st.text(max_size=10),
                               "arguments": st.dictionaries(st.sampled_from(["account_id", "amount", "pin", "x", "limit"]),
                                                            json_values, max_size=3)})
actions = st.one_of(
    st.text(max_size=60),
    calls.map(json.dumps),
    st.lists(calls, max_size=3).map(json.dumps),
    calls.map(lambda c: f"<tool_call>{json.dumps(c)}</tool_call>"),
    st.text(max_size=30).map(lambda s: "{" + s),
    st.text(max_size=30).map(lambda s: "<tool_call>" + s),
    json_values,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 50), acts=st.lists(actions, min_size=1, max_size=6))
def test_random_actions_never_raise_and_invalid_calls_change_nothing(seed, acts):
    env = bank_env(max_steps=5)
    env.reset(seed=seed)
    for action in acts:
        if env.done:
            break
        before = copy.deepcopy(env.backend.state)
        obs, reward, terminated, truncated, info = env.step(action)
        assert isinstance(obs, str) and env.observation_space.contains(obs)
        assert info["step_label"]["label"] in seal_envs.LABELS
        if info["events"] and not any(e["kind"] == "ok" for e in info["events"]):
            assert env.backend.state == before


def test_force_end_verifies_a_running_episode():
    env = bank_env()
    env.reset(seed=2)
    env.step('{"name": "get_balance", "arguments": {"account_id": "ACC-1001"}}')
    reward, info = env.force_end()
    assert reward == 0.0 and "verdict" in info and len(info["step_labels"]) == 1
    with pytest.raises(RuntimeError):
        env.force_end()


def test_tools_follow_surface_changes_and_are_read_only():
    env = bank_env()
    _, info = env.reset(seed=0)
    before = env.tools
    # the info's list is the caller's; the schemas in it are env.tools' own, shared and read-only
    assert info["tools"] == thaw(before) == before and info["tools"] is not before and env.tools is before
    assert all(a is b for a, b in zip(info["tools"], before))
    info["tools"].append({"type": "function", "function": {"name": "mine"}})  # the list is the caller's
    assert len(env.tools) == len(info["tools"]) - 1
    with pytest.raises(TypeError, match="read-only"):
        before[0]["function"]["name"] = "mutated"
    with pytest.raises(TypeError, match="read-only"):
        info["tools"][0]["function"]["parameters"]["required"].append("mutated")
    with pytest.raises(TypeError, match="read-only"):
        before.append("mutated")
    with pytest.raises(TypeError):
        env.messages[0]["content"] = "mutated"
    copy_ = thaw(before)
    copy_[0]["function"]["name"] = "mutated"  # a thawed copy is the caller's
    *_, info = env.step('{"name": "list_accounts", "arguments": {"customer_id": "C-1"}}')
    assert "tools" not in info  # nothing changed: the info does not repeat the tool list
    env.apply_patch(seal_envs.SurfacePatch("affordance", "set_alert", 1))
    *_, info = env.step('{"name": "list_accounts", "arguments": {"customer_id": "C-1"}}')
    after = {t["function"]["name"]: t for t in info["tools"]}  # the new surface's tools, once
    assert "[required]" in json.dumps(after["set_alert"]) and "mutated" not in after and thaw(env.tools) == info["tools"]


def test_tools_rendered_per_tool_equal_a_whole_render_under_every_surface():
    """The env assembles tool lists from per-tool renders keyed by each tool's view of the
    surface: under raised channels and presets the list, its JSON lines and its copy are what
    rendering the whole set afresh gives, and a patch re-renders only the tool it names."""
    from seal_envs.core.surface import PRESETS, Surface
    from seal_envs.core.types import text_json
    from seal_envs.env import _rendered_tools

    env = bank_env()
    env.reset(seed=0)
    ep = env._episode
    patches = [seal_envs.SurfacePatch("affordance", "set_alert", 3), seal_envs.SurfacePatch("constraint", "transfer", 1),
               seal_envs.SurfacePatch("affordance", "transfer", 1)]
    surfaces = [Surface(preset=p) for p in PRESETS if p != "canonical"] + [Surface(preset=PRESETS[1]).apply_all(patches)]
    surfaces += [Surface().apply_all(patches[:k]) for k in range(len(patches) + 1)]
    for surface in surfaces:
        whole = surface.render_tools(ep.specs, ep.available, ep.backend.POLICIES)
        got = _rendered_tools(surface, ep.specs, ep.available, ep.backend.POLICIES)
        assert thaw(got.data) == whole == got.listed() and got.listed() is not got.listed()
        assert got.lines == "\n".join(text_json(t) for t in whole)
    before = _rendered_tools(surfaces[-2], ep.specs, ep.available, ep.backend.POLICIES).data
    after = _rendered_tools(surfaces[-1], ep.specs, ep.available, ep.backend.POLICIES).data
    changed = [a["function"]["name"] for a, b in zip(after, before) if a is not b]
    assert changed == ["transfer"]


def test_new_messages_add_up_to_the_conversation():
    env = bank_env()
    _, info = env.reset(seed=3)
    seen = list(info["new_messages"])
    agent, done = OracleAgent(), False
    while not done:
        _, _, terminated, truncated, info = env.step(agent.act(env, info))
        seen += info["new_messages"]
        assert seen == thaw(env.messages)  # the deltas are the conversation, message for message
        done = terminated or truncated
    assert info["messages"] == thaw(env.messages) and info["tools"] == thaw(env.tools)
    json.dumps({"messages": env.messages, "tools": env.tools})  # read-only values are still JSON


def test_infos_share_no_mutable_object_under_gymnasium_checker():
    """Gymnasium's passive checker warns when two consecutive infos share a mutable object.
    An episode that ends at its first step carries the tools in both infos; the schemas are
    shared read-only values, the lists fresh, so the checker must stay silent."""
    import warnings

    env = gym.make("seal/ToolUse-Bank-v0")  # with the passive checker
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, first = env.reset(seed=0)
        *_, terminated, truncated, last = env.step("I cannot help with that.")
    assert terminated and "tools" in first and "tools" in last  # a one-turn task: the answer ends it
    assert last["tools"] is not first["tools"] and last["tools"] == first["tools"]


# -- issue 14: bad input, isolation, contract gaps ------------------------------------------
from seal_envs.coevolution import CoEvolution  # noqa: E402
from seal_envs.core.evolver import Evolver  # noqa: E402
from seal_envs.core.surface import SurfacePatch, example_arguments  # noqa: E402
from seal_envs.domains import GENERATORS  # noqa: E402


def test_non_finite_numbers_never_reach_a_tool():
    """NaN passes every comparison a tool makes (a NaN transfer once passed the daily limit and
    left the balance at nan): every number parameter of every tool of every domain refuses it."""
    checked = set()
    for domain in sorted(GENERATORS):
        env = gym.make("seal/ToolUse-v0", domains=(domain,), split="ood" if domain == "smarthome" else "train")
        env = env.unwrapped
        env.reset(seed=0)
        checked |= _check_non_finite(env)
    assert {"bank", "shop"} <= {d for d, *_ in checked}


def _check_non_finite(env) -> set:
    checked = set()
    for name, spec in env.specs.items():
        for param, prop in spec.parameters["properties"].items():
            if prop.get("type") not in ("number", "integer"):
                continue
            for value in (float("nan"), float("inf"), -float("inf")):
                before = copy.deepcopy(env.backend.state)
                event = env.backend.execute(ToolCall(name, example_arguments(spec) | {param: value}))
                assert (event.kind, event.param) == ("schema_violation", param), (name, param, event)
                assert env.backend.state == before
                checked.add((env.task.domain, name, param))
    return checked


def test_nan_transfer_is_a_labelled_schema_violation():
    env = bank_env()
    env.reset(seed=0)
    action = '{"name": "transfer", "arguments": {"from_account": "A", "to_account": "B", "amount": NaN}}'
    *_, info = env.step(action)
    assert info["step_label"]["label"] == "schema_violation" and info["events"][0]["param"] == "amount"


def test_a_step_that_raises_leaves_the_episode_as_it_was():
    env = bank_env()
    env.reset(seed=0)
    env.step("<tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>")
    ep = env._episode
    saved = (env.messages, env.steps, list(ep.turn_texts), env.user_turn, ep.observed, ep.reported,
             copy.deepcopy(env.record))

    def boom(call, available=None):
        raise RuntimeError("a fault inside the service")

    real, env.backend.execute = env.backend.execute, boom
    with pytest.raises(RuntimeError, match="fault inside"):
        env.step('Checking.<tool_call>{"name": "get_balance", "arguments": {"account_id": "X"}}</tool_call>')
    ep = env._episode
    assert (env.messages, env.steps, ep.turn_texts, env.user_turn, ep.observed, ep.reported, env.record) == saved
    env.backend.execute = real
    *_, info = env.step("That is all.")
    assert info["step_label"]["label"] in seal_envs.LABELS


@pytest.mark.parametrize("action", ["x" * 9000, "[" + ", ".join(['{"name": "a"}'] * 65) + "]",
                                    {"role": "assistant", "tool_calls": [{"name": "a", "arguments": {"k": {1}}}]},
                                    '{"name": "transfer", "arguments": {"amount": ' + "9" * 5000 + "}}"])
def test_a_rejected_action_is_a_format_error_turn_that_changes_nothing(action):
    env = bank_env()
    env.reset(seed=0)
    state, turn, n = env.backend.comparable_state(), env.user_turn, len(env.messages)
    *_, info = env.step(action)
    assert info["step_label"]["label"] == "format_error"
    assert env.backend.comparable_state() == state and env.user_turn == turn and len(env.steps) == 1
    assert len(env.messages) == n + 2 and len(env.messages[n]["content"]) < 8300  # bounded transcript


@pytest.mark.parametrize("env_id", ["seal/ToolUse-Bank-v0", "seal/BFCL-MultiTurn-Base-v0"])
def test_time_limit_truncation_is_verified_and_diagnosed(env_id):
    if env_id not in seal_envs.registered_ids():
        pytest.skip("bfcl-eval is not installed")
    env = gym.make(env_id, max_episode_steps=2)
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step('{"name": "nope", "arguments": {}}')
    assert not (terminated or truncated)
    _, reward, terminated, truncated, info = env.step('{"name": "nope", "arguments": {}}')
    assert truncated and not terminated and reward == 0.0
    assert "verdict" in info and len(info["step_labels"]) == 2 and "official_turn_tags" in info
    env.reset(seed=1)  # and the next episode starts normally


def _failing_infos():
    env = bank_env()
    infos = []
    for seed in range(4):
        env.reset(seed=seed)
        env.step('{"name": "transfer", "arguments": {"amount": "lots"}}')
        *_, info = env.step("Done.")
        while "verdict" not in info:
            *_, info = env.step("Done.")
        infos.append(info)
    return infos


def test_surfaces_respect_the_frozen_check():
    patched = seal_envs.CANONICAL.apply(SurfacePatch("affordance", "transfer", 1))
    env = gym.make("seal/ToolUse-v0", split="test").unwrapped
    with pytest.raises(seal_envs.FrozenSurfaceError):
        env.surface = patched
    assert env.surface == seal_envs.CANONICAL.freeze()
    for kwargs in ({"split": "test"}, {"evaluation": True}):
        with pytest.raises(seal_envs.FrozenSurfaceError, match="refuses"):
            gym.make("seal/ToolUse-v0", surface=patched, **kwargs)
    train = bank_env()
    train.surface = patched
    assert train.surface is patched
    with pytest.raises(TypeError):
        train.surface = {"levels": []}


def test_no_surface_names_a_hidden_tool():
    """Recovery at level 2 suggests a close tool name: never one hidden in this turn."""
    ts = TaskSet(("bank", "shop", "files", "travel", "calendar"), "train")
    task = next(ts[i] for i in range(len(ts)) if ts[i].hidden_tools)
    env = gym.make("seal/ToolUse-v0").unwrapped
    env.reset(options={"task": task})
    for kind in ("unknown_tool", "unavailable_tool"):
        env.apply_patch(SurfacePatch("recovery", kind, 1))
        env.apply_patch(SurfacePatch("recovery", kind, 2))
    for hidden in task.hidden_tools:
        for name in (hidden + "s", hidden[:-1], hidden):
            _, _, _, _, info = env.step(json.dumps({"name": name, "arguments": {}}))
            shown = env.messages[-1]["content"] + json.dumps(info["events"])
            assert f"'{hidden}'" not in shown or name == hidden, shown
            if env.done:
                return


def test_bare_call_dict_action_runs_the_call():
    """A bare call dict is executed; it used to end the episode as an empty 'ok' answer (issue 20)."""
    for action in ({"name": "list_accounts", "arguments": {}}, [{"name": "list_accounts", "arguments": {}}]):
        env = gym.make("seal/ToolUse-Bank-v0")
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(action)
        assert not terminated and info["tool_calls"] == [{"name": "list_accounts", "arguments": {}}]
        assert obs.startswith("[tool:list_accounts]")
        assert info["step_label"]["label"] == "schema_violation"  # customer_id is required: the call ran


@pytest.mark.parametrize("action", [{"foo": 1}, {"role": "user", "content": "hi"}, ("list_accounts",), None, 3])
def test_unknown_action_shape_is_a_labelled_format_error(action):
    env = gym.make("seal/ToolUse-Bank-v0")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert not terminated and info["step_label"]["label"] == "format_error"
    assert "format_error" in obs and "assistant" in obs


@pytest.mark.parametrize("env_id", seal_envs.registered_ids())
def test_printing_the_env_and_its_spaces_fits_on_a_screen(env_id):
    """repr(env.observation_space) was 55,000 characters (the whole charset of a Text space)."""
    env = gym.make(env_id, disable_env_checker=True)
    for text in (repr(env.observation_space), repr(env.action_space), str(env), str(env.unwrapped)):
        assert len(text) < 200 and "\n" not in text, text[:300]
    assert "max_length=65536" in repr(env.observation_space)
    vec = gym.make_vec("seal/ToolUse-Bank-v0", num_envs=2, vectorization_mode="sync")
    assert len(repr(vec.observation_space)) < 400
    vec.close()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_play_across_episode_ends(mode):
    """Copies out of phase (one resets while another steps) merge their infos: step_label is a
    dict at reset too, so Gymnasium's info merge never meets a None where another copy has a dict."""
    envs = gym.make_vec("seal/ToolUse-Bank-v0", num_envs=3, vectorization_mode=mode)
    try:
        envs.reset(seed=0)
        ended = 0
        for t in range(12):
            actions = ["Done." if (t + i) % 2 else '<tool_call>{"name": "get_balance", "arguments": {}}</tool_call>'
                       for i in range(3)]
            _, _, terminated, truncated, info = envs.step(actions)
            ended += int((terminated | truncated).sum())
            assert isinstance(info["step_label"], dict)
        assert ended >= 3
    finally:
        envs.close()
